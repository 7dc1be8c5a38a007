"""The host's websocket entry: `ProtocolTypeRouter({"http": ..., "websocket": websocket_application()})`."""
from __future__ import annotations

import gc
import logging
from collections.abc import Iterable
from typing import Any, cast

from channels.routing import URLRouter
from django.urls import path, re_path, reverse

from chat.api import wsserver
from chat.api.auth import TokenOrSessionAuthMiddleware
from chat.api.consumer import ChatConsumer
from chat.conf import chat_settings

log = logging.getLogger(__name__)


def websocket_path() -> str:
    """The websocket's path without the leading slash: where `chat.urls` is mounted, plus `ws/`."""
    return reverse("pagechat:websocket").lstrip("/")


async def _unrouted(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A websocket to a path nobody serves: refused at the handshake (close before accept: the server answers 403),
    with one warning line, as Django logs an HTTP 404 (Channels' own router raises: a 500 and a traceback)."""
    log.warning("websocket refused (%r): no websocket is served at this path", str(scope.get("path", ""))[:200])
    if (await receive())["type"] == "websocket.connect":
        await send({"type": "websocket.close"})


class _Routes(URLRouter):
    """Channels' URLRouter ending with a route for every other path (`_unrouted`); a path outside the server's
    `root_path`, which the router refuses before its routes, is `_unrouted` as well."""

    def __init__(self, routes: list[Any]) -> None:
        super().__init__([*routes, re_path(r"", cast(Any, _unrouted))])  # an ASGI app, which Django's stubs do not know

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        root = scope.get("root_path", "")
        if root and "path_remaining" not in scope and not str(scope.get("path", "")).startswith(root):
            return await _unrouted(scope, receive, send)
        return await super().__call__(scope, receive, send)


def websocket_application(*, extra_paths: Iterable[str] = ()) -> Any:
    """The chat consumer at `websocket_path()` (and `extra_paths`), behind token-or-session auth and origin checks;
    a websocket to any other path is refused at the handshake (403) before authentication, with one warning line.

    Call it after `get_asgi_application()` (the URLconf must be importable). Under daphne, daphne's own
    websocket message limit becomes CHAT_MAX_FRAME_BYTES (chat.api.wsserver). With CHAT_GC_FREEZE (the default) the
    objects loaded so far are frozen out of garbage collection (`gc.freeze()`)."""
    wsserver.install()
    consumer = TokenOrSessionAuthMiddleware(ChatConsumer.as_asgi())
    paths = dict.fromkeys([websocket_path(), *(p.lstrip("/") for p in extra_paths)])
    app = _Routes([path(p, consumer) for p in paths])
    if chat_settings.CHAT_GC_FREEZE:
        # Django, the apps and the URLconf are loaded now and live as long as the process; every full collection
        # would walk them again on the event loop (the first event's tail under load). Garbage first, then freeze.
        gc.collect()
        gc.freeze()
    return app
