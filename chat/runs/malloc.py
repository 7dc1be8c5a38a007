"""Handing freed memory back to the OS after long answers (glibc's `malloc_trim`), from the server process itself.

A long answer makes megabytes of short-lived objects (the text as it is joined, rendered, saved and sent). Once
they are freed, glibc keeps their pages: free chunks between live ones, and the heap's top below its trim
threshold, are not returned, so a server's RSS stays at its high-water mark after every long answer and after
its retained runs are let go. `malloc_trim(0)` returns every whole free page of every arena (madvise), which
glibc otherwise never does in the middle of a heap. It costs a walk of the free lists (milliseconds on the
event loop), so it runs once at least TRIM_AFTER bytes of events have been let go (or replayed: a finished run's
frames are rebuilt for the reader) since the last trim, a moment after (the run's task and its sockets' sends finish
first), at most every TRIM_INTERVAL, never per event. A no-op off glibc (musl, macOS).
"""
from __future__ import annotations

import asyncio
import contextvars
import ctypes
import logging
import os
import time
from collections.abc import Callable

log = logging.getLogger(__name__)
# Bytes of run events let go (finished, or freed after their retention) that make a trim worth it: a long answer
# frees several times its events' size in transient objects, a short one too little to matter.
TRIM_AFTER = 256 * 1024
TRIM_DELAY = 1.0  # seconds: the run's last saves and sends finish, and a burst of endings costs one trim
TRIM_INTERVAL = 2.0  # seconds at least between two trims (each walks the heap's free chunks: ~0.3-2 ms on the loop)


def _load() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library is not glibc (or its name cannot be found)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (AttributeError, OSError, ValueError):  # no confstr name, no glibc, no symbol
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class Trimmer:
    """Counts the bytes of run events let go and trims the C heap once enough went (one pending trim at a time)."""

    def __init__(self) -> None:
        self._trim = _load()
        self._owed = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._last = float("-inf")  # when the last trim ran (time.monotonic())
        self.trims = 0  # how many ran (tests, logs)

    @property
    def available(self) -> bool:
        return self._trim is not None

    def released(self, nbytes: int) -> None:
        """`nbytes` of run events were (or are about to be) freed: trim TRIM_DELAY from now once TRIM_AFTER is owed.

        Safe to call from a finalizer (no loop running: the next call on the loop schedules the trim)."""
        if self._trim is None:
            return
        self._owed += nbytes
        if self._owed < TRIM_AFTER:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._timer is not None and self._timer_loop is loop and not loop.is_closed():
            return  # one is already due
        self._timer_loop = loop
        # in a context of its own: the trim belongs to no run (its log line carries none of the caller's ids)
        self._timer = loop.call_later(max(TRIM_DELAY, self._last + TRIM_INTERVAL - time.monotonic()), self.trim,
                                      context=contextvars.Context())

    def trim(self) -> bool:
        """Return the C heap's free pages to the OS now; True if any were."""
        self._timer = self._timer_loop = None
        if self._trim is None:
            return False
        owed, self._owed = self._owed, 0
        started = time.perf_counter()
        released = bool(self._trim(0))
        self._last = time.monotonic()
        self.trims += 1
        log.debug("malloc_trim after %d bytes of run events: %s in %.1f ms", owed, "released" if released else "nothing",
                  (time.perf_counter() - started) * 1000)
        return released


trimmer = Trimmer()
