"""SIGTERM for servers without a lifespan hook (daphne): stop the runs first, then the server."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)
Stop = Callable[[], Coroutine[Any, Any, None]]


class SigtermChain:
    """Installed on the loop that starts the first run; chains to whatever handler was there before
    (Twisted's reactor stop, or the default), so the server's own shutdown follows ours."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fired = False

    def install(self, stop: Stop) -> None:
        """On SIGTERM run `stop()` (once), then re-raise SIGTERM to the previous handler."""
        loop = asyncio.get_running_loop()
        if self._loop is loop or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        try:
            loop.add_signal_handler(signal.SIGTERM, self._fire, loop, previous, stop)
        except (NotImplementedError, RuntimeError, ValueError):
            return
        self._loop, self._fired = loop, False

    def _fire(self, loop: asyncio.AbstractEventLoop, previous: Any, stop: Stop) -> None:
        if self._fired:
            return
        self._fired = True

        async def stop_then_chain() -> None:
            try:
                await stop()
            finally:
                with contextlib.suppress(Exception):  # the loop may be closing; the handler goes with it
                    loop.remove_signal_handler(signal.SIGTERM)
                self._loop = None
                handler = previous if callable(previous) or previous in (signal.SIG_IGN, signal.SIG_DFL) else signal.SIG_DFL
                signal.signal(signal.SIGTERM, handler)
                os.kill(os.getpid(), signal.SIGTERM)  # now the server's own shutdown

        task = loop.create_task(stop_then_chain())
        task.add_done_callback(lambda t: None if t.cancelled() or t.exception() is None else log.error(
            "graceful shutdown failed", exc_info=t.exception()))
