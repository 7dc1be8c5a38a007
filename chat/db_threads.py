"""Database threads of their own for the work a new message waits on, outside Django's shared sync thread.

Django runs every `sync_to_async` call of a process on one thread, in order. Under load that thread is busy with
other runs' flushes and saves, so a send that queued there for its credential check or its admission would wait
for all of them: the user's first event would grow with everyone else's traffic. Each `DbThread` is one thread
with its own database connections, recycled the way Django's request cycle recycles them.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connections


class DbThread:
    """One named thread that runs database jobs in the order they were submitted."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def run[**P, R](self, fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        """`fn` as a coroutine function that runs on this thread (its broken or expired connections recycled first)."""
        def job(*args: P.args, **kwargs: P.kwargs) -> R:
            close_old_connections()  # outside Django's request cycle: nothing else recycles this thread's connections
            return fn(*args, **kwargs)

        return sync_to_async(job, thread_sensitive=False, executor=self._executor)

    def close_connections(self) -> None:
        """Close this thread's connections (tests drop their database afterwards)."""
        self._executor.submit(connections.close_all).result(timeout=10)


# Admissions: the acknowledgement waits for the stored message and run (one writer, in arrival order).
ADMISSION = DbThread("chat-ack")
# Credential checks before every send: reads, so they never wait for an admission's write either.
CREDENTIALS = DbThread("chat-auth")


def db_threads_close() -> None:
    """Close the connections of every thread here."""
    for thread in (ADMISSION, CREDENTIALS):
        thread.close_connections()
