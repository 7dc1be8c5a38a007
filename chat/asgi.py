"""The host's websocket entry: `ProtocolTypeRouter({"http": ..., "websocket": websocket_application()})`."""
from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import Any

from channels.routing import URLRouter
from django.urls import path, reverse

from chat import wsserver
from chat.auth import TokenOrSessionAuthMiddleware
from chat.conf import chat_settings
from chat.consumers import ChatConsumer


def websocket_path() -> str:
    """The websocket's path without the leading slash: where `chat.urls` is mounted, plus `ws/`."""
    return reverse("pagechat:websocket").lstrip("/")


def websocket_application(*, extra_paths: Iterable[str] = ()) -> Any:
    """The chat consumer at `websocket_path()` (and `extra_paths`), behind token-or-session auth and origin checks.

    Call it after `get_asgi_application()` (the URLconf must be importable). Under daphne, daphne's own
    websocket message limit becomes CHAT_MAX_FRAME_BYTES (chat.wsserver). With CHAT_GC_FREEZE (the default) the
    objects loaded so far are frozen out of garbage collection (`gc.freeze()`)."""
    wsserver.install()
    consumer = ChatConsumer.as_asgi()
    paths = dict.fromkeys([websocket_path(), *(p.lstrip("/") for p in extra_paths)])
    app = TokenOrSessionAuthMiddleware(URLRouter([path(p, consumer) for p in paths]))
    if chat_settings.CHAT_GC_FREEZE:
        # Django, the apps and the URLconf are loaded now and live as long as the process; every full collection
        # would walk them again on the event loop (the first event's tail under load). Garbage first, then freeze.
        gc.collect()
        gc.freeze()
    return app
