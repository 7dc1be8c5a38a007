"""Daphne's own websocket message limit set to CHAT_MAX_FRAME_BYTES, refusing with `too_large` + close 1009.

Daphne (autobahn) checks a message's size before the application sees it, with its own limit (1 MiB by
default) and by dropping the TCP connection (the client sees 1006 and no reason). A frame over the app's
limit but under daphne's got `too_large`; one over daphne's got nothing. Here daphne's limit becomes the
app's and an oversized message is answered like any other too-large frame: the `too_large` error, then a
clean close with 1009 (message too big). Installed by `websocket_application()`; a no-op without daphne.

uvicorn (websockets) has the same gap (its `--ws-max-size` is 16 MiB, and a bigger message is closed with 1009
and no frame): run it with `--ws chat.api.wsserver:UvicornWebSocketProtocol`, its websockets protocol with the
app's limit and the same `too_large` frame before the close.
"""
from __future__ import annotations

import logging
from typing import Any

from chat.conf import chat_settings
from chat.events import error_event

log = logging.getLogger(__name__)
CLOSE_TOO_BIG = 1009
_INSTALLED = False


def install() -> bool:
    """Hook daphne's server and websocket protocol (idempotent); False when daphne is not importable."""
    global _INSTALLED
    if _INSTALLED:
        return True
    try:
        from daphne import server as daphne_server, ws_protocol  # type: ignore[import-untyped]
    except ImportError:
        return False
    original_run = daphne_server.Server.run

    def run(self: Any) -> Any:
        """Clamp daphne's limits (from its CLI, runserver options or DAPHNE_* settings) to the app's before it listens."""
        limit = chat_settings.CHAT_MAX_FRAME_BYTES
        self.websocket_max_message_size = min(self.websocket_max_message_size or limit, limit)
        self.websocket_max_frame_size = min(self.websocket_max_frame_size or limit, limit)
        return original_run(self)

    def max_message_size_exceeded(self: Any, msg_size: int, max_msg_size: int, reason: str) -> None:
        """Say why before closing: the `too_large` error frame, then close 1009 (not a dropped connection)."""
        try:
            if self.state == self.STATE_OPEN:
                frame = error_event("too_large", f"frame is larger than {max_msg_size} bytes").wire()
                self.sendMessage(frame.encode("utf-8"), isBinary=False)
        except Exception:  # the close below still happens
            log.warning("could not send too_large before closing", exc_info=True)
        self.failByDrop = False  # a close frame with the code, not a TCP reset
        self._fail_connection(CLOSE_TOO_BIG, "frame too large")

    original_send = ws_protocol.WebSocketProtocol.serverSend

    def server_send(self: Any, content: Any, binary: bool = False) -> None:
        """The limit is on what clients send: autobahn applies it to outgoing messages as well, which failed any event
        over it (a long answer's `complete`). The reactor thread sends one message at a time, so lifting it here is local."""
        limit, self.maxMessagePayloadSize = self.maxMessagePayloadSize, 0
        try:
            original_send(self, content, binary)
        finally:
            self.maxMessagePayloadSize = limit

    daphne_server.Server.run = run
    ws_protocol.WebSocketProtocol.serverSend = server_send
    ws_protocol.WebSocketProtocol._max_message_size_exceeded = max_message_size_exceeded
    _INSTALLED = True
    return True


def _uvicorn_protocol() -> type:
    """uvicorn's websockets protocol with the app's message limit and a `too_large` frame before close 1009."""
    from uvicorn.protocols.websockets.websockets_impl import WebSocketProtocol
    from websockets.frames import Opcode
    from websockets.protocol import State

    class UvicornWebSocketProtocol(WebSocketProtocol):
        def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
            limit = chat_settings.CHAT_MAX_FRAME_BYTES
            config.ws_max_size = min(config.ws_max_size or limit, limit)
            super().__init__(config, *args, **kwargs)

        def fail_connection(self, code: int = 1006, reason: str = "") -> None:
            if code == CLOSE_TOO_BIG and self.state is State.OPEN:
                try:
                    frame = error_event("too_large", f"frame is larger than {self.max_size} bytes").wire()
                    self.write_frame_sync(True, Opcode.TEXT, frame.encode("utf-8"))
                except Exception:  # the close below still happens
                    log.warning("could not send too_large before closing", exc_info=True)
            super().fail_connection(code, reason)

    return UvicornWebSocketProtocol


def __getattr__(name: str) -> Any:
    """`chat.api.wsserver:UvicornWebSocketProtocol`, built on first use (uvicorn is optional)."""
    if name == "UvicornWebSocketProtocol":
        cls = _uvicorn_protocol()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
