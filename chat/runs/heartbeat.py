"""The process's heartbeat (chat.runs.manager's loop, every CHAT_HEARTBEAT_INTERVAL): owned runs marked alive, dead
owners' runs swept and their logs closed, lost logs rewritten after a Redis restart, and the cancels and approvals the
doorbell may have missed polled; the socket limiter's leases refreshed."""
from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError

from chat.conf import chat_settings
from chat.infra.db_threads import HEARTBEAT
from chat.infra.logs import Throttled
from chat.infra.redis_client import redis_errors
from chat.quotas.limits import limiter
from chat.runs import store
from chat.runs.handle import RunHandle
from chat.runs.log import RunLog

PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"[:64]


def _away_errors() -> tuple[type[BaseException], ...]:
    """What the database or Redis being away raises (a heartbeat then waits for the next tick)."""
    return (DatabaseError, *redis_errors())


class RunHeartbeat:
    """The heartbeat's steps, mixed into the RunManager (whose runs, logs and cancel they use)."""

    handles: dict[str, RunHandle]
    _beat_failed: Throttled
    _beat_bug: Throttled
    _log_unavailable: Throttled

    if TYPE_CHECKING:  # provided by RunManager
        def running_ids(self) -> list[str]: ...
        def _running_handles(self) -> list[RunHandle]: ...
        def shared_log(self) -> RunLog | None: ...
        async def close_log(self, run_id: str) -> int: ...
        async def cancel(self, run_id: str) -> None: ...

    async def _heartbeat_loop(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except _away_errors() as exc:  # the database or Redis is away: the next tick tries again
                self._beat_failed.warning("heartbeat failed", exc=exc)
            except Exception as exc:  # a bug: the loop (the sweep, the polls) goes on, its traceback once a minute
                self._beat_bug.warning("heartbeat failed", exc=exc)
            else:
                self._beat_failed.recovered("heartbeat: working again")
            await asyncio.sleep(chat_settings.CHAT_HEARTBEAT_INTERVAL)

    async def tick(self) -> None:
        """One heartbeat: mark owned runs alive, sweep dead owners' runs, repair and poll what the doorbell may miss.

        Its database work runs on the heartbeat's own thread (chat.infra.db_threads.HEARTBEAT): never on the thread of the
        request that started the loop, and never queued behind turns (a late beat lets other processes sweep live runs)."""
        if await HEARTBEAT.run(store.runs_heartbeat)(run_ids=self.running_ids(), process_id=PROCESS_ID):
            await self._close_swept()
        await self._poll_answers(lambda h: h.approvals, store.approvals_answered)
        await self._poll_answers(lambda h: h.tab_answers, store.tab_answers_given)
        shared = self.shared_log()
        if shared is not None:
            failed: BaseException | None = None
            for step in (self._verify_logs, self._poll_cancels):
                try:
                    await step(shared)
                except shared.errors as exc:
                    failed = exc
            if failed is not None:
                self._log_unavailable.warning("the run log is unavailable during the heartbeat", exc=failed)
            else:
                self._log_unavailable.recovered("the run log answers again")
        await limiter.refresh()

    async def _close_swept(self) -> None:
        shared = self.shared_log()
        if shared is None:
            return
        for run_id in await HEARTBEAT.run(store.runs_recently_interrupted)():
            try:
                await self.close_log(run_id)
            except shared.errors as exc:
                self._log_unavailable.warning("could not close the log of interrupted run %s", run_id, exc=exc)

    async def _verify_logs(self, shared: RunLog) -> None:
        """After a Redis restart the logs are gone: rewrite those of runs this process still holds, and have writers
        backing off through the outage retry as soon as the log answers (followers elsewhere are waiting for them)."""
        now = time.monotonic()
        check: list[RunHandle] = []
        behind: list[RunHandle] = []
        for h in self.handles.values():  # one pass: every retained run, each heartbeat
            if h.needs_check(now):
                check.append(h)
            if h.write_pending:
                behind.append(h)
        if not check and not behind:
            return
        if check:
            for h, length in zip(check, await shared.lengths([h.run_id for h in check]), strict=True):
                if length < h.durable_seq:
                    h.request_rewrite()
        else:
            await shared.ping()  # raises while the log is still unreachable: the writers keep backing off
        for h in behind:
            h.retry_writes()

    async def _poll_cancels(self, shared: RunLog) -> None:
        for run_id in await shared.cancel_requested(self.running_ids()):
            await self.cancel(run_id)

    async def _poll_answers(self, waits: Callable[[RunHandle], dict[str, asyncio.Future[Any]]],
                            answered: Callable[..., list[tuple[str, str, Any]]]) -> None:
        """Hand the answers stored in the database (`answered(run_ids=...)`: (run_id, tool_use_id, answer)) to this
        process's runs still waiting for them (`waits(handle)`: tool_use_id -> future): a lost doorbell is a delay."""
        waiting = {(h.run_id, tid): fut for h in self._running_handles() for tid, fut in waits(h).items() if not fut.done()}
        if not waiting:
            return
        for run_id, tool_use_id, answer in await HEARTBEAT.run(answered)(run_ids={rid for rid, _ in waiting}):
            fut = waiting.get((run_id, tool_use_id))
            if fut is not None and not fut.done():
                fut.set_result(answer)
