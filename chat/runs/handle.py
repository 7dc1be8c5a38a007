"""One live run in its owner's process: its ordered events, its followers, and its copy in the run log."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any, Concatenate, ParamSpec

from chat.events import Envelope
from chat.infra.metrics import RUN_LOG_LAG
from chat.runs.compact import FinishedEvents
from chat.runs.log import ResyncRequired, RunLog
from chat.runs.malloc import trimmer

log = logging.getLogger(__name__)
P = ParamSpec("P")
# An event builder of chat.events: `<Event>.wire(envelope, seq, **fields) -> str`.
Builder = Callable[Concatenate[Envelope, int, P], str]
# The longest a writer waits between attempts while the shared log is unreachable (the heartbeat cuts the wait short
# once the log answers again): after a Redis restart a lost log is written again within about this long, and
# followers in other processes wait for that (RunManager._settle).
WRITE_RETRY_MAX = 2.0


class RunHandle:
    """A run's events (seq = index + 1), kept in memory for followers here and copied in order to a shared log."""

    __slots__ = (
        "run_id", "conversation_id", "user_id", "envelope", "events", "done", "_changed", "task", "approvals", "tab_answers",
        "cancel_requested", "interrupting", "finishing", "created", "finished_at", "_log", "_log_wanted", "_writer",
        "_written", "_rewrite", "_log_changed", "_unwritten_since", "_retry", "base", "bytes", "max_events", "max_bytes",
    )

    def __init__(self, run_id: str, conversation_id: int, user_id: int, run_log: RunLog | None = None, *,
                 max_events: int = 0, max_bytes: int = 0) -> None:
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.user_id = user_id
        self.envelope = Envelope(run_id, conversation_id)
        # seqs base+1..; earlier ones were released (followers of those resync). Once the run has ended (and only this
        # process holds its events) they are kept compactly, read back one at a time (chat.runs.compact).
        self.events: list[str] | FinishedEvents = []
        self.base = 0
        self.bytes = 0  # the characters of the events held (once compacted: the bytes they take)
        self.max_events = max_events  # 0: unbounded
        self.max_bytes = max_bytes
        self.done = False
        self._changed: asyncio.Future[None] | None = None  # created only while a follower waits
        self.task: asyncio.Task[Any] | None = None
        self.approvals: dict[str, asyncio.Future[bool]] = {}
        self.tab_answers: dict[str, asyncio.Future[dict[str, Any]]] = {}  # frontend tool calls waiting for the tab
        self.cancel_requested = False
        self.interrupting = False  # set by a graceful shutdown: the run ends `interrupted`, not `cancelled`
        self.finishing = False  # saving its result: a cancel now would contradict what is being saved
        self.created = time.monotonic()
        self.finished_at: float | None = None
        self._log = run_log if run_log is not None and run_log.shared else None
        self._log_wanted = asyncio.Event() if self._log is not None else None
        self._writer: asyncio.Task[None] | None = None
        self._written = 0  # events known to be in the shared log
        self._rewrite = False
        self._log_changed = asyncio.Event()
        self._unwritten_since: float | None = None  # when the oldest event not yet in the shared log was made
        self._retry = asyncio.Event()  # the shared log answers again: a writer backing off retries now

    @property
    def last_seq(self) -> int:
        return self.base + len(self.events)

    @property
    def durable_seq(self) -> int:
        """The last seq other processes can read (all of them without a shared log: nobody else reads)."""
        return self._written if self._log is not None else self.last_seq

    @property
    def shared(self) -> bool:
        """True when the run's events are copied to a log other processes read."""
        return self._log is not None

    @property
    def writer(self) -> asyncio.Task[None] | None:
        return self._writer

    def append(self, build: Builder[P], /, *args: P.args, **fields: P.kwargs) -> int:
        """Build the next event (`build` is an event's `wire`), log it, then wake followers; returns its seq."""
        if self.done:
            raise RuntimeError("run already ended")
        seq = self.last_seq + 1
        self._hold(build(self.envelope, seq, *args, **fields))
        self._appended()
        return seq

    def end(self, build: Builder[P], /, *args: P.args, **fields: P.kwargs) -> int:
        """Append the run's terminal event (complete, error or cancelled): nothing can follow it."""
        if self.done:
            raise RuntimeError("run already ended")
        seq = self.last_seq + 1
        self._hold(build(self.envelope, seq, *args, **fields))
        self.done = True
        self.finished_at = time.monotonic()
        self._appended()
        # the run's transient objects (its text joined, rendered, saved, sent) are freed as its task ends: give
        # their pages back once enough went (chat.runs.malloc)
        trimmer.released(self.bytes)
        if self._log is None:
            self._compact()
        return seq

    def _compact(self) -> None:
        """Keep the ended run's events as one FinishedEvents (followers reading them go on by index)."""
        events = FinishedEvents(self.events, self.base, self.envelope)
        self.events, self.bytes = events, events.nbytes
        # when they are let go (the retention ends, the memory bound, a deleted conversation), the pages may go back too
        weakref.finalize(events, trimmer.released, events.nbytes).atexit = False

    def _hold(self, data: str) -> None:
        assert isinstance(self.events, list)  # compacted only once ended, and an ended run takes no more events
        self.events.append(data)
        self.bytes += len(data)
        over_events = self.max_events and len(self.events) > self.max_events
        over_bytes = self.max_bytes and self.bytes > self.max_bytes
        if (over_events or over_bytes) and (self._log is None or self._written > self.base):
            # over the run's bound: keep the newer half (one trim per many events, not one per event); with a
            # shared log only what it already holds can go (nothing while it is unreachable)
            if over_events:
                self.release_before(self.last_seq - self.max_events // 2 + 1)
            if over_bytes:
                self.release_before(self._seq_for_bytes(self.max_bytes // 2))

    def _seq_for_bytes(self, keep: int) -> int:
        """The seq before which events must go so that about `keep` characters of the newest stay."""
        held, seq = 0, self.last_seq
        for data in reversed(self.events):
            held += len(data)
            if held > keep:
                break
            seq -= 1
        return seq + 1

    def release_before(self, seq: int) -> int:
        """Let go of events before `seq` that other processes can already read (or nobody else reads); how many.

        A follower that still needs them gets ResyncRequired (the client reloads the persisted text over REST)."""
        floor = min(seq, self._written + 1 if self._log is not None else seq, self.last_seq) - 1  # never the last
        drop = floor - self.base
        if drop <= 0:
            return 0
        if isinstance(self.events, list):
            self.bytes -= sum(len(d) for d in self.events[:drop])
            del self.events[:drop]
        else:  # an ended run's compact events: the few kept are read out
            self.events = self.events[drop:]
            self.bytes = sum(len(d) for d in self.events)
        self.base += drop
        return drop

    def _appended(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)
        if self._log_wanted is not None:
            if self._unwritten_since is None:
                self._unwritten_since = time.perf_counter()
            self._log_wanted.set()
            if self._writer is None or self._writer.done():
                self._writer = asyncio.get_running_loop().create_task(self._write_log(), name=f"runlog:{self.run_id}")

    async def follow(self, after_seq: int = 0) -> AsyncIterator[tuple[int, str]]:
        """(seq, event) after `after_seq`, then live ones, until the terminal event."""
        i = after_seq
        while True:
            if i < self.base:  # released while this follower lagged behind (the run's memory bound)
                raise ResyncRequired(self.run_id)
            while i < self.last_seq:
                if i < self.base:
                    raise ResyncRequired(self.run_id)
                i += 1
                yield i, self.events[i - 1 - self.base]
            if self.done:
                return
            if self._changed is None:
                self._changed = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._changed)  # shared by every follower: one leaving must not cancel it

    async def wait_done(self) -> None:
        async for _ in self.follow(self.last_seq):
            pass

    async def wait_durable(self, seq: int, timeout: float) -> bool:
        """Wait until events up to `seq` are readable by other processes; False on timeout."""
        deadline = time.monotonic() + timeout
        while self.durable_seq < seq:
            changed = self._log_changed
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                return False
        return True

    def needs_check(self, now: float) -> bool:
        """Worth checking that the shared log still holds everything (it may have been lost in a Redis restart)."""
        return (self._log is not None and self.durable_seq == self.last_seq and not self._rewrite
                and (not self.done or (self.finished_at is not None and now - self.finished_at < 300)))

    @property
    def write_pending(self) -> bool:
        """True while events (or a rewrite) wait for the shared log, e.g. a writer backing off through an outage."""
        return self._log is not None and (self._written < self.last_seq or self._rewrite)

    def retry_writes(self) -> None:
        """The shared log answers again: a writer backing off retries now instead of waiting out its delay."""
        if self.write_pending:
            self._retry.set()

    def request_rewrite(self) -> None:
        """The shared copy was found incomplete (Redis restarted): write the whole log again."""
        if self._log is None or self._log_wanted is None:
            return
        self._rewrite = True
        self._log_wanted.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_log(), name=f"runlog:{self.run_id}")

    async def _write_log(self) -> None:
        """Copy events to the shared log in order, batching whatever accumulated meanwhile."""
        assert self._log is not None and self._log_wanted is not None
        delay = 0.1
        while True:
            await self._log_wanted.wait()
            self._log_wanted.clear()
            n = self.last_seq
            since, self._unwritten_since = self._unwritten_since, None  # events made from now on start a new batch
            if self._written < n or self._rewrite:
                terminal = self.done and n == self.last_seq
                try:
                    complete = True
                    if not self._rewrite:
                        complete = await self._log.append(self.run_id, self._written + 1,
                                                          self.events[self._written - self.base:n - self.base], terminal=terminal)
                    if self._rewrite or not complete:
                        log.warning("run log of %s was incomplete; writing it again", self.run_id)
                        # from the first event still held: followers of released ones resync
                        await self._log.rewrite(self.run_id, self.events[:n - self.base], terminal=terminal, first_seq=self.base + 1)
                    self._written, self._rewrite, delay = n, False, 0.1
                    if since is not None:
                        RUN_LOG_LAG.observe(time.perf_counter() - since)
                    changed, self._log_changed = self._log_changed, asyncio.Event()
                    changed.set()
                except asyncio.CancelledError:
                    raise
                except Exception:  # the store is down: keep the events in memory and retry with backoff
                    log.warning("run log write failed; retrying", exc_info=log.isEnabledFor(logging.DEBUG))
                    if since is not None and self._unwritten_since is None:
                        self._unwritten_since = since  # the lag of the retried batch counts from its first event
                    # a nudge from before this failure is stale: only one that comes while waiting cuts the wait
                    self._retry.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._retry.wait(), delay)
                    delay = min(delay * 2, WRITE_RETRY_MAX)
                    self._log_wanted.set()
                    continue
            if self.done and self._written == self.last_seq:
                return
