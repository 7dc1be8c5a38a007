"""The process's runs: owning them (tasks, not sockets), following any run wherever it lives, cancel and
approval signalling across processes, the heartbeat with the stale-run sweep, and graceful shutdown.

Guarantees (tested in tests/resilience/):
- every event gets the next gapless seq and is in the in-memory log before any follower sees it; with a
  shared run log it is then copied there in order, and re-copied whole if the log lost it (Redis restart)
  while this process still holds the run;
- a follower in any process gets seq after_seq+1.. exactly once each, then exactly one terminal event,
  or `ResyncRequired` when those events are no longer retained anywhere;
- a run whose owner died is closed: the sweep marks it `interrupted` and appends a terminal `error`
  event to its log, so followers elsewhere end cleanly;
- the channel layer is only a doorbell: cancel requests also leave a mark in the run log and approvals
  are recorded in the database, and the owner polls both on its heartbeat.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from chat.conf import chat_settings
from chat.infra.db_threads import HEARTBEAT
from chat.infra.logs import Throttled
from chat.models import Run
from chat.runs import store
from chat.runs.doorbell import Doorbell
from chat.runs.handle import WRITE_RETRY_MAX, RunHandle
from chat.runs.heartbeat import RunHeartbeat
from chat.runs.log import ResyncRequired, RunLog, RunState, run_log_from_settings
from chat.runs.shutdown import SigtermChain

log = logging.getLogger(__name__)


# A log that lacks its terminal event this long after the run ended in the database gets it from there.
TERMINAL_GRACE = 3.0


def owner_rewrite_grace() -> float:
    """Seconds a follower waits, from a recent run's end, for its (alive) owner to write a lost log again."""
    # the owner's writer retries at least every WRITE_RETRY_MAX (sooner: its heartbeat wakes it once the log answers)
    return 2 * chat_settings.CHAT_HEARTBEAT_INTERVAL + WRITE_RETRY_MAX + 1


class RunManager(RunHeartbeat):
    """The process's registry of runs it owns, and the way to reach runs owned elsewhere."""

    def __init__(self) -> None:
        self.handles: dict[str, RunHandle] = {}
        # held_bytes without walking every retained run (up to CHAT_PROCESS_MEMORY_MAX_BYTES of them, an hour's
        # worth by default) twice per turn: running handles are summed, finished ones counted once as they finish
        self._running: dict[str, RunHandle] = {}
        self._finished_sizes: dict[str, int] = {}
        self._finished_bytes = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._log: RunLog | None = None
        self._background: asyncio.Task[Any] | None = None
        self._doorbell = Doorbell({"run.cancel": self._on_cancel, "run.approve": self._on_approve, "run.tab_answer": self._on_tab_answer})
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sigterm = SigtermChain()
        self.stopping = False
        # recoverable conditions that repeat every heartbeat: one warning line a minute, not one a tick
        self._beat_failed = Throttled(log)
        self._beat_bug = Throttled(log, level=logging.ERROR, traceback=True)
        self._log_unavailable = Throttled(log)

    # ---- configuration ---------------------------------------------------------------------------

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._log = loop, None
            self._background = None
            self._doorbell.reset()
            self.stopping = False

    def run_log(self) -> RunLog:
        """The configured run-log backend (one instance per event loop: its clients are bound to the loop)."""
        self._bind_loop()
        if self._log is None:
            self._log = run_log_from_settings()
        return self._log

    def shared_log(self) -> RunLog | None:
        """The run log when other processes read it, else None."""
        run_log = self.run_log()
        return run_log if run_log.shared else None

    # ---- owning runs -----------------------------------------------------------------------------

    def create(self, run_id: str, conversation_id: int, user_id: int) -> RunHandle:
        handle = RunHandle(run_id, conversation_id, user_id, self.run_log(),
                           max_events=chat_settings.CHAT_RUN_MEMORY_MAX_EVENTS, max_bytes=chat_settings.CHAT_RUN_MEMORY_MAX_BYTES)
        self._finished_bytes -= self._finished_sizes.pop(run_id, 0)  # a replaced handle of the same run is let go
        self.handles[run_id] = handle
        self._running[run_id] = handle
        self.bound_memory()
        return handle

    def clear(self) -> None:
        """Forget every run this process holds (tests; a run still going keeps running, unregistered)."""
        self.handles.clear()
        self._running.clear()
        self._finished_sizes.clear()
        self._finished_bytes = 0

    def held_bytes(self) -> int:
        """Characters of events this process holds, over all its runs (work proportional to the running ones only)."""
        return self._finished_bytes + sum(h.bytes for h in self._running.values())

    def bound_memory(self) -> None:
        """Keep the process under CHAT_PROCESS_MEMORY_MAX_BYTES: forget finished runs, oldest first, then release
        running runs' oldest events (their followers resync). Called as runs start and end, not per event."""
        limit = chat_settings.CHAT_PROCESS_MEMORY_MAX_BYTES
        held = self.held_bytes()
        if held <= limit:
            return
        for handle in sorted((h for h in self.handles.values() if h.done), key=lambda h: h.finished_at or 0):
            held -= handle.bytes
            self._forget(handle)
            if held <= limit:
                return
        for handle in sorted(self.handles.values(), key=lambda h: -h.bytes):
            before = handle.bytes
            handle.release_before(handle.last_seq)
            held -= before - handle.bytes
            if handle.run_id in self._finished_sizes:
                self._finished_bytes -= before - handle.bytes
                self._finished_sizes[handle.run_id] = handle.bytes
            if held <= limit:
                return

    def start(self, handle: RunHandle, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `coro` as a task owned by the process (not by any socket or request)."""
        task = asyncio.get_running_loop().create_task(coro, name=f"run:{handle.run_id}")
        handle.task = task
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._finished(handle, t))
        self.ensure_background()
        self.install_signal_handlers()
        return task

    def _finished(self, handle: RunHandle, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if self._running.get(handle.run_id) is handle:
            del self._running[handle.run_id]
            if self.handles.get(handle.run_id) is handle:  # its events no longer change: counted once, from now on
                self._finished_sizes[handle.run_id] = handle.bytes
                self._finished_bytes += handle.bytes
        if not task.cancelled() and task.exception() is not None:
            log.error("run %s crashed", handle.run_id, exc_info=task.exception())
        if handle.shared:
            # the shared log holds the run: let go of its events as soon as they are all written there (followers
            # still reading hold their own reference; new ones read the log)
            writer = handle.writer
            if writer is None or writer.done():
                self._forget(handle)
            else:
                writer.add_done_callback(lambda _: self._forget(handle))
        else:
            # keep finished runs replayable from memory for the retention window (or until memory is needed)
            asyncio.get_running_loop().call_later(chat_settings.CHAT_RUN_LOG_TTL, self._forget, handle)
        self.bound_memory()

    def _forget(self, handle: RunHandle) -> None:
        if self.handles.get(handle.run_id) is handle:
            del self.handles[handle.run_id]
            self._finished_bytes -= self._finished_sizes.pop(handle.run_id, 0)

    def local(self, run_id: str) -> RunHandle | None:
        return self.handles.get(run_id)

    def running_ids(self) -> list[str]:
        return [h.run_id for h in self._running_handles()]

    def _running_handles(self) -> list[RunHandle]:
        """The runs still going here (the background ticks walk these, not every retained finished run)."""
        return [h for rid, h in self._running.items() if not h.done and self.handles.get(rid) is h]

    # ---- following -------------------------------------------------------------------------------

    async def follow(self, run_id: str, after_seq: int) -> AsyncIterator[tuple[int, str]]:
        """(seq, event) after `after_seq`, live until the terminal one, from wherever the run lives."""
        self.ensure_background()
        handle = self.handles.get(run_id)
        if handle is not None:
            if after_seq > handle.last_seq:
                raise ResyncRequired(run_id)
            async for item in handle.follow(after_seq):
                yield item
            return
        async for item in self.run_log().follow(run_id, after_seq, settle=self._settle):
            yield item

    async def _settle(self, run_id: str, missing_for: float | None) -> RunState:
        """For a follower whose log is idle or missing: is the run alive? Close the log of a dead one."""
        if run_id in self.handles:  # it is (now) owned here: its log is being written
            return "running"
        row = await store.run_row(run_id)
        if row is None:
            return "gone"
        if row["status"] == Run.Status.RUNNING:
            beat = row["heartbeat_at"]
            if beat is None or store.age(beat) <= chat_settings.CHAT_STALE_AFTER:
                return "running"  # its owner is alive and writes (or, after a Redis restart, rewrites) the log
            await HEARTBEAT.run(store.runs_sweep)()  # its owner stopped beating
            row = await store.run_row(run_id)
            if row is None:
                return "gone"
            if row["status"] == Run.Status.RUNNING:
                return "running"
        finished = row["finished_at"]
        if missing_for is not None:
            # Ended, and no log: expired (resync), or lost in a Redis restart and about to be rewritten by
            # its owner if that is alive and the run recent: give the owner time to retry its write.
            # (Not for a swept run: its owner is dead. Not past the TTL: then the log simply expired.)
            recent = (row["status"] != Run.Status.INTERRUPTED and finished is not None
                      and store.age(finished) < min(300, chat_settings.CHAT_RUN_LOG_TTL))
            if not recent or finished is None:
                return "gone"
            # The grace counts from the run's end, not from the first miss: while the run went on, its heartbeat
            # vouched for the owner, whose writer (backing off through the outage) may write the log again only
            # after the run ended. Counted from the first miss, it could be over by then: a resync mid-stream,
            # which callers answer with the stored terminal event as if nothing had been sent (a gap).
            waited = min(missing_for, store.age(finished))
            return "running" if waited < owner_rewrite_grace() else "gone"
        # ended in the database; normally its owner writes the terminal event within milliseconds
        if row["status"] != Run.Status.INTERRUPTED and (finished is None or store.age(finished) < TERMINAL_GRACE):
            return "running"
        appended = await self.close_log(run_id)
        return "closed" if appended >= 0 else "gone"

    async def close_log(self, run_id: str) -> int:
        """Give the log of a run that ended without writing it (its process died) its terminal event."""
        shared = self.shared_log()
        event = await HEARTBEAT.run(store.run_closing_event)(run_id=run_id) if shared is not None else None
        if shared is None or event is None:
            return -1
        before, after = event.envelope().around_seq(event.model_dump_json())
        seq = await shared.close_stream(run_id, before, after)
        if seq > 0:
            await HEARTBEAT.run(store.run_last_seq_set)(run_id=run_id, seq=seq)
        return seq

    # ---- signalling ------------------------------------------------------------------------------

    async def cancel(self, run_id: str) -> None:
        """Ask the owning process to cancel the run (directly when it is this one)."""
        handle = self.handles.get(run_id)
        if handle is not None:
            if not handle.done and not handle.finishing and handle.task is not None:
                handle.cancel_requested = True
                handle.task.cancel()
            return
        shared = self.shared_log()
        if shared is not None:
            try:  # the owner also polls this mark on its heartbeat: a lost doorbell is only a delay
                await shared.request_cancel(run_id)
            except shared.errors:
                log.warning("could not record the cancel request of %s", run_id)
        await self._doorbell.ring(run_id, {"type": "run.cancel", "run_id": run_id})

    async def deliver_approval(self, run_id: str, tool_use_id: str, approved: bool) -> None:
        """Hand an (already recorded) approval answer to the process running the tool."""
        handle = self.handles.get(run_id)
        if handle is not None:
            fut = handle.approvals.get(tool_use_id)
            if fut is not None and not fut.done():
                fut.set_result(approved)
            return
        # the answer is in the database; the owner also finds it there on its heartbeat
        await self._doorbell.ring(run_id, {"type": "run.approve", "run_id": run_id, "tool_use_id": tool_use_id, "approved": approved})

    async def deliver_tab_answer(self, run_id: str, tool_use_id: str, result: dict[str, Any]) -> None:
        """Hand a tab's (already recorded) answer to a frontend tool call to the process running the turn."""
        handle = self.handles.get(run_id)
        if handle is not None:
            fut = handle.tab_answers.get(tool_use_id)
            if fut is not None and not fut.done():
                fut.set_result(result)
            return
        # the answer is in the database; the owner also finds it there on its heartbeat
        await self._doorbell.ring(run_id, {"type": "run.tab_answer", "run_id": run_id, "tool_use_id": tool_use_id, "result": result})

    async def listen_for(self, run_id: str) -> None:
        """Receive the run's cancel/approve messages sent from other processes."""
        await self._doorbell.listen(run_id, self._spawn)

    async def _on_cancel(self, message: dict[str, Any]) -> None:
        if message["run_id"] in self.handles:
            await self.cancel(message["run_id"])

    async def _on_approve(self, message: dict[str, Any]) -> None:
        if message["run_id"] in self.handles:
            await self.deliver_approval(message["run_id"], message["tool_use_id"], message["approved"])

    async def _on_tab_answer(self, message: dict[str, Any]) -> None:
        if message["run_id"] in self.handles:
            await self.deliver_tab_answer(message["run_id"], message["tool_use_id"], message["result"])

    # ---- heartbeat + sweep -----------------------------------------------------------------------

    def ensure_background(self) -> None:
        """Start the heartbeat/sweep task once per event loop."""
        self._bind_loop()
        if self._background is None or self._background.done():
            self._background = self._spawn(self._heartbeat_loop())

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A process-wide task (the heartbeat, the doorbell's receiver) in an empty context of its own: it outlives the
        request or socket that happened to start it, so it inherits nothing from it (asgiref's executor of that
        request, whose thread is gone once it answered; its log ids)."""
        task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ---- graceful shutdown -----------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        """On SIGTERM, let running runs finish (or checkpoint them) before the server's own handler stops it."""
        if chat_settings.CHAT_GRACEFUL_SHUTDOWN:
            self._sigterm.install(self._on_sigterm)

    async def _on_sigterm(self) -> None:
        log.info("SIGTERM: finishing %d running run(s) before stopping", len(self.running_ids()))  # a deploy, not a fault
        await self.shutdown(timeout=chat_settings.CHAT_SHUTDOWN_TIMEOUT)

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Graceful stop: let running runs finish for up to `timeout`, then interrupt them (their partial
        answer is saved and their terminal event written), and flush the run logs."""
        self.stopping = True
        deadline = time.monotonic() + timeout
        while True:  # runs started during the grace period are waited for too
            running = [h.task for h in self.handles.values() if h.task is not None and not h.task.done()]
            if not running:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for h in self.handles.values():
                    if h.task is not None and not h.task.done() and not h.finishing:
                        h.interrupting = True
                        h.task.cancel()
                await asyncio.wait(running, timeout=5)
                break
            await asyncio.wait(running, timeout=remaining, return_when=asyncio.ALL_COMPLETED)
        writers = [w for h in self.handles.values() if (w := h.writer) is not None and not w.done()]
        if writers:
            await asyncio.wait(writers, timeout=5)


manager = RunManager()
