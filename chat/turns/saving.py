"""Saving a turn's answer while it streams: the text followers have seen is appended to its message in growing windows."""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from chat.agent.types import LoopState
from chat.conf import chat_settings
from chat.infra.db_threads import RUNS
from chat.runs import RunHandle
from chat.turns import persistence
from chat.turns.pipe import TextPipe


class StreamSaver:
    """Appends the pipe's emitted chunks (and the provider messages, when they grew) to the run's assistant message;
    one save runs at a time, and the saved text is always a prefix of the emitted one."""

    def __init__(self, handle: RunHandle, message_id: int, state: LoopState) -> None:
        self.handle = handle
        self.message_id = message_id
        self.state = state
        self.pipe: TextPipe | None = None  # the turn's, once it streams
        self.last_flush = time.perf_counter()
        self.flush_task: asyncio.Task[None] | None = None
        self.flush_timer: asyncio.TimerHandle | None = None
        self.flushed_chunks = 0  # chunks of pipe.emitted already appended to the message
        self.flushed_messages = 0  # provider messages already saved with it
        self.flush_window = chat_settings.CHAT_FLUSH_INTERVAL  # doubles after each flush (see maybe_flush)

    def provider_messages(self) -> list[dict[str, Any]]:
        """A copy: a flush serialises it in a thread while the loop keeps appending."""
        return list(self.state.messages)

    def maybe_flush(self) -> None:
        """Persist the text followers have seen; the window starts at CHAT_FLUSH_INTERVAL and doubles after each
        flush up to CHAT_FLUSH_MAX_INTERVAL, so a turn's writes grow with the log of its length, not with it."""
        if self.pipe is None or self.handle.done:
            return
        now = time.perf_counter()
        wait = self.flush_window - (now - self.last_flush)
        if wait > 0 or (self.flush_task is not None and not self.flush_task.done()):
            if self.flush_timer is None:
                self.flush_timer = asyncio.get_running_loop().call_later(max(wait, 0.02), self._flush_timer_fired)
            return
        self.last_flush = now
        upto = len(self.pipe.emitted)
        if upto > self.flushed_chunks:
            self.flush_window = min(self.flush_window * 2, max(chat_settings.CHAT_FLUSH_MAX_INTERVAL, chat_settings.CHAT_FLUSH_INTERVAL))
            self.flush_task = asyncio.get_running_loop().create_task(self._flush(upto, self.handle.last_seq))

    def _flush_timer_fired(self) -> None:
        self.flush_timer = None
        self.maybe_flush()

    async def flush_now(self) -> None:
        """Save everything emitted so far, now (before a tool runs), after any save under way."""
        if self.pipe is None:
            return
        self.pipe.flush()
        if self.flush_task is not None and not self.flush_task.done():
            with contextlib.suppress(Exception):
                await self.flush_task  # appends stay in order: one flush at a time
        # as the flush task, so a window firing meanwhile waits for it instead of appending the same chunks
        self.flush_task = asyncio.get_running_loop().create_task(self._flush(len(self.pipe.emitted), self.handle.last_seq))
        await self.flush_task

    async def settle(self) -> None:
        """No further window; a save under way ends first (the final save writes the same text again)."""
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        if self.flush_task is not None:
            # wait() neither raises its failure nor, when it was cancelled, its CancelledError, which would end the
            # run unfinished
            await asyncio.wait({self.flush_task})

    async def _flush(self, upto: int, seq: int) -> None:
        """Append the emitted chunks not yet saved (up to chunk `upto`) to the message; one flush runs at a time."""
        if self.pipe is None:  # the run has not started streaming
            return
        # other processes' followers must be able to read these events before the database holds their text
        await self.handle.wait_durable(seq, timeout=2.0)
        delta = "".join(self.pipe.emitted[self.flushed_chunks:upto])
        messages = self.provider_messages() if len(self.state.messages) != self.flushed_messages else None
        await RUNS.run(persistence.assistant_message_append)(message_id=self.message_id, delta=delta, provider_messages=messages)
        # advanced only once written: a failed flush is retried whole by the next one, so the text stays a prefix
        self.flushed_chunks = upto
        if messages is not None:
            self.flushed_messages = len(messages)
