"""Websocket handshake auth: a DRF token (programs, no Origin needed) or the session with an allowed Origin."""
from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlparse

from channels.auth import AuthMiddlewareStack
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import validate_host

logger = logging.getLogger(__name__)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


async def user_for_authorization(header: str) -> Any:
    """The active user of an `Authorization: Token <key>` header, or None (websocket and HTTP share this)."""
    from rest_framework.authtoken.models import Token

    kind, _, key = header.partition(" ")
    if kind.lower() != "token" or not key.strip():
        return None
    token = await Token.objects.select_related("user").filter(key=key.strip()).afirst()
    return token.user if token is not None and token.user.is_active else None


def origin_refusal(origin: str | None) -> str | None:
    """Why a cookie-authenticated socket from `origin` is refused, or None: it must come from one of our own hosts."""
    if not origin or origin == "null":
        return "no Origin header (browsers send one; programs authenticate with a token)"
    parsed = urlparse(origin)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f"Origin {origin[:200]!r} is not an http(s) origin"
    if not validate_host(parsed.hostname, settings.ALLOWED_HOSTS):
        return f"Origin {origin[:200]!r} is not allowed: its host must be in ALLOWED_HOSTS"
    return None


def origin_allowed(origin: str | None) -> bool:
    """A cookie-authenticated socket must come from one of our own hosts (no missing or `null` Origin)."""
    return origin_refusal(origin) is None


async def _refuse(scope: dict[str, Any], receive: Any, send: Any, reason: str) -> Any:
    """Refuse the handshake (403) and log why; never logs a token or cookie."""
    logger.warning("websocket refused (%s): %s", scope.get("path", ""), reason)
    return await WebsocketDenier()(scope, receive, send)


class _SessionRequired:
    """After session auth: a socket without a signed-in session is refused (and logged) before the consumer."""

    def __init__(self, inner: Any):
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        user = scope.get("user")
        if user is None or not user.is_authenticated:
            return await _refuse(scope, receive, send, "no signed-in session (and no Authorization: Token header)")
        return await self.inner(scope, receive, send)


class TokenOrSessionAuthMiddleware:
    """`Authorization: Token <key>` -> that user; otherwise session auth behind an Origin check."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.session_inner = AuthMiddlewareStack(_SessionRequired(inner))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            return await self.inner(scope, receive, send)
        auth = _header(scope, b"authorization")
        if auth:
            user = await user_for_authorization(auth)
            if user is None:
                return await _refuse(scope, receive, send, "bad token: the Authorization header names no active user's token")
            return await self.inner({**scope, "user": user, "auth": "token"}, receive, send)
        refusal = origin_refusal(_header(scope, b"origin"))
        if refusal is not None:
            return await _refuse(scope, receive, send, refusal)
        return await self.session_inner({**scope, "auth": "session"}, receive, send)


__all__ = ["AnonymousUser", "TokenOrSessionAuthMiddleware", "origin_allowed", "origin_refusal"]
