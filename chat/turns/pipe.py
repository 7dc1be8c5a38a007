"""The turn's text on its way to the run log: payload and suggestion blocks held back, deltas coalesced."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from chat.events import SUGGESTION_MARKERS, TextDeltaEvent
from chat.runs import RunHandle
from payloads.stream import MarkerStreamFilter
from tools.sources.citations import SourceMarkerFilter


class TextPipe:
    """Hides payload/suggestion blocks from the live stream and coalesces text deltas into windows."""

    def __init__(self, handle: RunHandle, markers: list[str], window: float) -> None:
        self.handle = handle
        # the suggestion markers also take the specs' line formats (`a, b, c`; `label|action|handler|style|data`)
        self.filter = MarkerStreamFilter(markers, line_markers=SUGGESTION_MARKERS)
        self.sources = SourceMarkerFilter()  # `[[source:N]]` never goes out as written: readers get `[N]`
        self.window = window
        # The run's text, once: `emitted` holds what went out as text_delta events (one chunk per event), `pending`
        # what waits for the coalescing window. Flushes append emitted chunks to the database (never rewrite).
        self.emitted: list[str] = []
        self.pending: list[str] = []
        self.last_emit = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.first_text_at: float | None = None
        self.on_emit: Callable[[], None] | None = None

    @property
    def emitted_text(self) -> str:
        """The text already sent as text_delta events (a prefix of `text`)."""
        return "".join(self.emitted)

    @property
    def text(self) -> str:
        """The whole visible text (built when asked: the final save; never per token)."""
        return "".join(self.emitted) + "".join(self.pending)

    def feed(self, raw: str) -> None:
        """Model text: blocks behind a marker are held back (and parsed at the end)."""
        self._queue(self.filter.feed(self.sources.feed(raw)))

    def feed_verbatim(self, text: str) -> None:
        """Text the server wrote (tool markers): shown as is, never parsed for payload blocks."""
        self._queue(text)

    def _queue(self, text: str) -> None:
        if not text:
            return
        self.pending.append(text)
        now = time.perf_counter()
        if now - self.last_emit >= self.window:
            self.flush()
        elif self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(self.window - (now - self.last_emit), self.flush)

    def flush(self) -> None:
        """Emit what is buffered now (called before any non-text event, and by the timer)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.pending and not self.handle.done:
            text = "".join(self.pending)
            self.pending.clear()
            self.emitted.append(text)
            self.last_emit = time.perf_counter()
            if self.first_text_at is None:
                self.first_text_at = self.last_emit
            self.handle.append(TextDeltaEvent.wire, text=text)
            if self.on_emit is not None:
                self.on_emit()

    def close(self) -> None:
        """The model is done: release what the filter still holds, then emit everything."""
        self._queue(self.filter.feed(self.sources.close()))
        self._queue(self.filter.close())
        self.flush()
