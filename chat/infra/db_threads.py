"""Database threads of their own for a turn's work, outside Django's shared sync thread.

Django runs every `sync_to_async` call of a process on one thread, in order. Under load that thread is busy with
every request's database work, so a send that queued there for its credential check or its admission, or a run
for its plan and its save, would wait for all of it: the user's first event would grow with everyone else's
traffic. Each `DbThread` is one thread with its own database connections, recycled the way Django's request cycle
recycles them.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections, connections
from django.utils import translation

# A connection that finished a job less than this many seconds ago skips Django's health check before the next
# one (CONN_HEALTH_CHECKS: a `SELECT 1` round trip on PostgreSQL, three per turn, one of them before the
# acknowledgement). The idea of HikariCP's aliveBypassWindowMs (500 ms): a connection just used is alive; one
# that sat idle may have been dropped by the server, a proxy or a failover, and is checked as Django would.
HEALTH_CHECK_BYPASS = 0.5


# How long at most a job of a thread that yields (RUNS) waits for the admissions queued before it: a burst of
# admissions gets the process's one core (the GIL) first, so every first event goes out before the runs' own work
# (their plans, flushes and saves, which no one waits on as closely); and the runs never wait longer than this.
YIELD_AT_MOST = 0.1


class DbThread:
    """One named thread that runs database jobs in the order they were submitted; with `yields_to`, each job
    first waits (YIELD_AT_MOST at most) until that thread has no job queued or running."""

    def __init__(self, name: str, yields_to: DbThread | None = None) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._last_end = float("-inf")  # when this thread's last job ended (read and written on that thread only)
        self._yields_to = yields_to
        self._pending = 0  # jobs submitted and not ended (any thread reads it, under the condition's lock)
        self._idle = threading.Condition()

    def _enter(self) -> None:
        with self._idle:
            self._pending += 1

    def _leave(self) -> None:
        with self._idle:
            self._pending -= 1
            if not self._pending:
                self._idle.notify_all()

    def _wait_idle(self, timeout: float) -> None:
        """Until no job is queued or running here, or `timeout` seconds."""
        with self._idle:
            self._idle.wait_for(lambda: not self._pending, timeout)

    def _recycle(self) -> None:
        """Django's recycling between requests (connections broken, in error or past CONN_MAX_AGE are closed);
        the health check is left pending only when the thread has been idle (HEALTH_CHECK_BYPASS)."""
        close_old_connections()  # outside Django's request cycle: nothing else recycles this thread's connections
        if time.monotonic() - self._last_end < HEALTH_CHECK_BYPASS:
            for conn in connections.all(initialized_only=True):
                if conn.connection is not None:  # kept open by the recycling above
                    conn.health_check_done = True  # type: ignore[attr-defined]  # Django sets it per request; not in the stubs

    def run[**P, R](self, fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        """`fn` as a coroutine function that runs on this thread in the caller's context (a copy: what the job
        sets stays in the job) and active language, its broken, errored or expired connections recycled first."""
        def job(language: str | None, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                if self._yields_to is not None:
                    self._yields_to._wait_idle(YIELD_AT_MOST)
                self._recycle()
                with translation.override(language):
                    return fn(*args, **kwargs)
            finally:
                self._last_end = time.monotonic()

        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            # not sync_to_async: these jobs need neither its thread-sensitive routing nor the copy of context
            # variables back into the caller, and those cost a third of a hop's CPU here. The active language is
            # carried by hand: asgiref's Local (Django's translation) ignores a context copied into another thread, so
            # a turn's plan (page title, context builder) would be in the default language, not the user's
            run = functools.partial(contextvars.copy_context().run, job, translation.get_language(), *args, **kwargs)
            self._enter()
            try:
                submitted = self._executor.submit(run)
            except BaseException:
                self._leave()
                raise
            submitted.add_done_callback(self._left)  # run, failed or cancelled before it ran: no longer pending
            return await asyncio.wrap_future(submitted)

        return call

    def _left(self, _job: Future[Any]) -> None:
        self._leave()

    def close_connections(self) -> None:
        """Close this thread's connections (tests drop their database afterwards)."""
        self._executor.submit(connections.close_all).result(timeout=10)


# Admissions: the acknowledgement waits for the stored message, its run and the empty answer (one writer, in
# arrival order).
ADMISSION = DbThread("chat-ack")
# Credentials: a token's user (handshakes, HTTP requests) and the periodic re-checks of open sockets; reads, so they
# never wait for an admission's write either.
CREDENTIALS = DbThread("chat-auth")
# Runs' own writes and reads after the acknowledgement: the plan, text flushes, tool calls and approvals, the
# final save and the title; never queued behind the requests on Django's shared thread.
RUNS = DbThread("chat-runs", yields_to=ADMISSION)
# Readiness probes (/readyz): never queued behind turns' writes or Django's shared thread, one connection.
PROBES = DbThread("chat-probe")
# The process's heartbeat, the stale-run sweep and the polls on it (chat.runs.manager): a late heartbeat lets other
# processes sweep this one's live runs, so it never waits for turns or Django's shared thread; and it never runs on
# the thread of the request whose turn started the loop (asgiref's executor of a sync view dies with the request).
HEARTBEAT = DbThread("chat-beat")


def db_threads_close() -> None:
    """Close the connections of every thread here."""
    for thread in (ADMISSION, CREDENTIALS, RUNS, PROBES, HEARTBEAT):
        thread.close_connections()
