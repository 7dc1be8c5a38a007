"""Every transport's authentication: a DRF token (programs) or the session, with the session's CSRF check on HTTP and
its Origin check on the websocket handshake; and the re-check of an open socket's credentials."""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Coroutine
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from channels.auth import AuthMiddlewareStack
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import RequestDataTooBig
from django.db import connections, router
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.http.request import split_domain_port, validate_host
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt
from rest_framework.permissions import IsAuthenticated

from chat.api.errors import error, exception_response
from chat.api.openapi import AUTHENTICATION
from chat.events.errors import ServiceError
from chat.infra.db_threads import CREDENTIALS

logger = logging.getLogger("chat.auth")  # the logger docs/embedding.md names for refused handshakes


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


# Close codes of a socket whose credentials stopped being valid while it was open (docs/protocol.md).
CLOSE_SESSION_ENDED = 4401  # logged out, or the session expired or was deleted (or the password changed)
CLOSE_TOKEN_REVOKED = 4402  # the token the socket was opened with was deleted
CLOSE_USER_INACTIVE = 4403  # the user was deactivated (or deleted)


def token_key(header: str) -> str | None:
    """The key of an `Authorization: Token <key>` header, or None."""
    kind, _, key = header.partition(" ")
    return key.strip() if kind.lower() == "token" and key.strip() else None


async def revocation(*, user_id: int, token: str | None, session_key: str | None) -> int | None:
    """The close code for a socket whose credentials were revoked since it opened, or None while they hold."""
    # the periodic re-check: on a thread of its own, never queued behind runs' work (a send's check runs inside
    # its admission, in the same database job: see chat.turns.admission)
    return await CREDENTIALS.run(credentials_revocation)(user_id, token, session_key)


def credentials_revocation(user_id: int, token: str | None, session_key: str | None) -> int | None:
    """`revocation`, blocking (for a database thread): the close code, or None while the credentials hold."""
    from django.contrib.auth import get_user_model

    if token is not None:
        # one query while all is well; a second only to say why not
        if _token_holds(token, user_id):
            return None
    elif session_key is not None and _session_user_id(session_key) == user_id:
        return None  # Django's own check: session not expired, password hash, user active
    if not get_user_model()._default_manager.filter(pk=user_id, is_active=True).exists():
        return CLOSE_USER_INACTIVE
    if token is not None:
        return CLOSE_TOKEN_REVOKED
    return CLOSE_SESSION_ENDED if session_key is not None else None


def _token_holds(token: str, user_id: int) -> bool:
    """True while the token exists, is the user's, and the user is active (one statement, its SQL written once)."""
    from rest_framework.authtoken.models import Token

    alias = router.db_for_read(Token)
    sql, order = _token_sql(alias)
    values: dict[str, Any] = {"key": token, "user_id": user_id, "is_active": True}
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, [values[name] for name in order])
        return cursor.fetchone() is not None


_KEY, _USER = "\x00key", -7  # stand-ins that tell the ORM's parameters apart


@cache
def _token_sql(alias: str) -> tuple[str, tuple[str, ...]]:
    """`Token.objects.filter(key=, user_id=, user__is_active=True).exists()` as the ORM writes it, built once (it
    runs before every send, and building it took longer than running it), with the names of its parameters."""
    from rest_framework.authtoken.models import Token

    sql, params = Token.objects.using(alias).filter(key=_KEY, user_id=_USER, user__is_active=True).values("pk")[:1].query.sql_with_params()
    names = {_KEY: "key", _USER: "user_id", True: "is_active"}
    return sql, tuple(names[p] for p in params)


def _session_user_id(session_key: str) -> int | None:
    """The user a stored session still authenticates (Django's own check: not expired, hash of the password)."""
    from importlib import import_module

    from django.contrib.auth import get_user

    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key)

    class _Request:  # what get_user reads
        session = store

    user = get_user(_Request())  # type: ignore[arg-type]
    return user.pk if user.is_authenticated else None


async def user_for_authorization(header: str) -> Any:
    """The active user of an `Authorization: Token <key>` header, or None (websocket and HTTP share this).

    On the credentials' database thread, not the async ORM's: an HTTP request's sync work runs on a thread of its
    own (Django's ASGI handler), which opened a database connection for this one query and closed it at the end of
    every request (the SSE stream's first event waited for that)."""
    key = token_key(header)
    if key is None:
        return None
    return await CREDENTIALS.run(token_user)(key)


def token_user(key: str) -> Any:
    """`user_for_authorization`, blocking (for a database thread)."""
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token is not None and token.user.is_active else None


def _request_origin(scope: dict[str, Any]) -> str | None:
    """`scheme://host[:port]` of the handshake as Django's `request.is_secure()` and `get_host()` would see it.

    None when the Host is missing or not in ALLOWED_HOSTS."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    secure = scope.get("scheme") in ("wss", "https")
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, value = proxy
        header = name.lower().removeprefix("http_").replace("_", "-")
        if header in headers:
            secure = headers[header].split(",", 1)[0].strip() == value
    host = headers.get("host")
    if settings.USE_X_FORWARDED_HOST and "x-forwarded-host" in headers:
        host = headers["x-forwarded-host"]
    if not host and scope.get("server"):
        server_host, port = scope["server"][0], scope["server"][1]
        host = server_host if port in (None, 80, 443) else f"{server_host}:{port}"
    if not host:
        return None
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    return f"{'https' if secure else 'http'}://{host}"


def origin_refusal(origin: str | None, scope: dict[str, Any] | None = None) -> str | None:
    """Why a cookie-authenticated socket from `origin` is refused, or None.

    Compared as Django's CSRF check compares a POST's Origin: scheme, host and port must equal the
    request's own (its Host, which must be in ALLOWED_HOSTS), or an exact entry of CSRF_TRUSTED_ORIGINS.
    Unlike the CSRF check, wildcard entries (`https://*.example.com`) are not accepted for sockets, and
    `ALLOWED_HOSTS = ["*"]` or a `.example.com` entry never admits another origin."""
    if not origin or origin == "null":
        return "no Origin header (browsers send one; programs authenticate with a token)"
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return f"Origin {origin[:200]!r} is not an http(s) origin"
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f"Origin {origin[:200]!r} is not an http(s) origin"
    own = _request_origin(scope or {})
    if own is not None and origin == own:
        return None
    if origin in (o for o in settings.CSRF_TRUSTED_ORIGINS if "*" not in o):
        return None
    return (f"Origin {origin[:200]!r} is not allowed: it must be this server's own origin "
            f"({own or 'Host missing or not in ALLOWED_HOSTS'}) or listed exactly in CSRF_TRUSTED_ORIGINS")


def origin_allowed(origin: str | None, scope: dict[str, Any] | None = None) -> bool:
    """A cookie-authenticated socket must come from this server's own origin or a trusted one (see origin_refusal)."""
    return origin_refusal(origin, scope) is None


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
            return await self.inner({**scope, "user": user, "auth": "token", "token": token_key(auth)}, receive, send)
        refusal = origin_refusal(_header(scope, b"origin"), scope)
        if refusal is not None:
            return await _refuse(scope, receive, send, refusal)
        return await self.session_inner({**scope, "auth": "session"}, receive, send)


# ---- HTTP ----------------------------------------------------------------------------------------

class Authenticated:
    """DRF views: a token or the session (DRF's checks CSRF), signed in, as the API document states (chat.api.openapi);
    declared here, not taken from the host's DRF defaults (which may be AllowAny)."""

    authentication_classes = AUTHENTICATION
    permission_classes = [IsAuthenticated]


def _csrf_probe(request: HttpRequest) -> HttpResponse:
    """A view that is not csrf_exempt, for the CSRF middleware's check of a session user's request."""
    return HttpResponse()


async def request_user(request: HttpRequest) -> tuple[Any, HttpResponse | None]:
    """The user of a DRF token or of the session (then with the CSRF check a browser form would get), or the refusal."""
    auth = request.headers.get("Authorization", "")
    if auth:
        user = await user_for_authorization(auth)
        return (user, None) if user is not None else (None, error("unauthorized", "invalid token"))
    user = await request.auser()
    if not user.is_authenticated:
        return None, error("unauthorized", "authentication required")
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        refused = CsrfViewMiddleware(_csrf_probe).process_view(request, _csrf_probe, (), {})
        if refused is not None:
            return None, error("unauthorized", "CSRF check failed")
    return user, None


AsyncView = Callable[..., Coroutine[Any, Any, HttpResponseBase]]


def endpoint(view: AsyncView) -> AsyncView:
    """A plain async view (SSE, run control, standard clients): authenticate (token, or session + CSRF), call the view
    with the user, answer refusals as error frames (chat.api.errors)."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            user, refused = await request_user(request)  # the session's CSRF check may read a form body
            if refused:
                return refused
            return await view(request, user, *args, **kwargs)
        except (ServiceError, RequestDataTooBig) as exc:
            return exception_response(exc)

    return csrf_exempt(wrapper)  # CSRF is enforced in request_user for session users only


__all__ = ["AnonymousUser", "TokenOrSessionAuthMiddleware", "origin_allowed", "origin_refusal"]
