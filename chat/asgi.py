"""The host's websocket entry: `ProtocolTypeRouter({"http": ..., "websocket": websocket_application()})`."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from channels.routing import URLRouter
from django.urls import path, reverse

from chat import wsserver
from chat.auth import TokenOrSessionAuthMiddleware
from chat.consumers import ChatConsumer


def websocket_path() -> str:
    """The websocket's path without the leading slash: where `chat.urls` is mounted, plus `ws/`."""
    return reverse("pagechat:websocket").lstrip("/")


def websocket_application(*, extra_paths: Iterable[str] = ()) -> Any:
    """The chat consumer at `websocket_path()` (and `extra_paths`), behind token-or-session auth and origin checks.

    Call it after `get_asgi_application()` (the URLconf must be importable). Under daphne, daphne's own
    websocket message limit becomes CHAT_MAX_FRAME_BYTES (chat.wsserver)."""
    wsserver.install()
    consumer = ChatConsumer.as_asgi()
    paths = dict.fromkeys([websocket_path(), *(p.lstrip("/") for p in extra_paths)])
    return TokenOrSessionAuthMiddleware(URLRouter([path(p, consumer) for p in paths]))
