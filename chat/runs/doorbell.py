"""Control messages (cancel, approve) to the process that owns a run, over the channel layer.

At most once, like the channel layer itself: every message it carries is also recorded where the
owner polls on its heartbeat (the run log's cancel mark, the approval's row), so a lost ring is a delay.
So a failing layer is recoverable: one warning line (chat.infra.logs.Throttled), never a traceback."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from channels.layers import get_channel_layer

from chat.infra.logs import Throttled
from chat.infra.redis_client import receive_timed_out

log = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any]], Coroutine[Any, Any, None]]
Spawn = Callable[[Coroutine[Any, Any, None]], object]


class Doorbell:
    """One control channel per process and event loop, subscribed to the group `run.<id>` of each run it owns."""

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self.handlers = handlers
        self._channel: str | None = None
        self._send_failed = Throttled(log)
        self._subscribe_failed = Throttled(log)
        self._receive_failed = Throttled(log)

    def reset(self) -> None:
        """A new event loop: the old channel's receiver is gone."""
        self._channel = None

    async def ring(self, run_id: str, message: dict[str, Any]) -> None:
        """Send `message` to the run's owner, wherever it is."""
        layer = get_channel_layer()
        if layer is not None:
            try:
                await layer.group_send(f"run.{run_id}", message)
            except Exception as exc:  # at-most-once anyway; the polled records cover a lost ring
                self._send_failed.warning("channel layer group_send failed for run %s", run_id, exc=exc)

    async def listen(self, run_id: str, spawn: Spawn) -> None:
        """Receive the run's control messages in this process (`spawn` runs the receiving loop)."""
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            if self._channel is None:
                self._channel = await layer.new_channel("runctl.")
                spawn(self._receive(layer, self._channel))
            await layer.group_add(f"run.{run_id}", self._channel)
        except Exception as exc:  # the heartbeat's polling still delivers cancels and approvals
            self._subscribe_failed.warning("could not subscribe to run %s control messages", run_id, exc=exc)

    async def _receive(self, layer: Any, channel: str) -> None:
        while True:
            try:
                msg = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if receive_timed_out(exc):
                    continue  # idle: no message within the layer's blocking wait; nothing failed
                self._receive_failed.warning("run control channel error", exc=exc)
                await asyncio.sleep(0.5)
                continue
            self._receive_failed.recovered("run control channel: receiving again")
            handler = self.handlers.get(msg.get("type", ""))
            if handler is None:
                continue
            try:
                await handler(msg)
            except Exception:  # a bug in a handler: it must not stop the receiver of every run's control messages
                log.exception("run control message %s failed", msg.get("type"))
