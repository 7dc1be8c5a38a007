"""Control messages (cancel, approve) to the process that owns a run, over the channel layer.

At most once, like the channel layer itself: every message it carries is also recorded where the
owner polls on its heartbeat (the run log's cancel mark, the approval's row), so a lost ring is a delay."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from channels.layers import get_channel_layer

log = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any]], Coroutine[Any, Any, None]]
Spawn = Callable[[Coroutine[Any, Any, None]], object]


class Doorbell:
    """One control channel per process and event loop, subscribed to the group `run.<id>` of each run it owns."""

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self.handlers = handlers
        self._channel: str | None = None

    def reset(self) -> None:
        """A new event loop: the old channel's receiver is gone."""
        self._channel = None

    async def ring(self, run_id: str, message: dict[str, Any]) -> None:
        """Send `message` to the run's owner, wherever it is."""
        layer = get_channel_layer()
        if layer is not None:
            try:
                await layer.group_send(f"run.{run_id}", message)
            except Exception:  # at-most-once anyway; the polled records cover a lost ring
                log.warning("channel layer group_send failed for run %s", run_id, exc_info=True)

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
        except Exception:  # the heartbeat's polling still delivers cancels and approvals
            log.warning("could not subscribe to run %s control messages", run_id, exc_info=True)

    async def _receive(self, layer: Any, channel: str) -> None:
        while True:
            try:
                msg = await layer.receive(channel)
                handler = self.handlers.get(msg.get("type", ""))
                if handler is not None:
                    await handler(msg)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("run control channel error", exc_info=True)
                await asyncio.sleep(0.5)
