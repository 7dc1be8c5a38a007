"""Websocket handshake auth: a DRF token (programs, no Origin needed) or the session with an allowed Origin."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from channels.auth import AuthMiddlewareStack
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import validate_host


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


def origin_allowed(origin: str | None) -> bool:
    """A cookie-authenticated socket must come from one of our own hosts (no missing or `null` Origin)."""
    if not origin or origin == "null":
        return False
    parsed = urlparse(origin)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return False
    return validate_host(parsed.hostname, settings.ALLOWED_HOSTS)


class TokenOrSessionAuthMiddleware:
    """`Authorization: Token <key>` -> that user; otherwise session auth behind an Origin check."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.session_inner = AuthMiddlewareStack(inner)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            return await self.inner(scope, receive, send)
        auth = _header(scope, b"authorization")
        if auth:
            user = await user_for_authorization(auth)
            if user is None:
                return await WebsocketDenier()(scope, receive, send)
            return await self.inner({**scope, "user": user, "auth": "token"}, receive, send)
        if not origin_allowed(_header(scope, b"origin")):
            return await WebsocketDenier()(scope, receive, send)
        return await self.session_inner({**scope, "auth": "session"}, receive, send)


__all__ = ["AnonymousUser", "TokenOrSessionAuthMiddleware", "origin_allowed"]
