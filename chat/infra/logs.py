"""Structured logs: every line a turn writes carries its run id, conversation id, user id (and error code once it
failed), from context variables the turn sets; `JsonFormatter` (python-json-logger) writes one JSON object a line.

LOGGING = {..., "filters": {"chat": {"()": "chat.infra.logs.RunContextFilter"}},
           "formatters": {"json": {"()": "chat.infra.logs.JsonFormatter"}}, ...}   (config/settings.py does this)

Nothing here logs message text; the turn's own lines carry ids, codes, counts and timings only.

Levels: an expected condition (an idle channel-layer receive ending on its timeout) is not logged above DEBUG; a
recoverable one (Redis or the database away for a while) is one WARNING line with its context and no traceback,
through `Throttled` when it can repeat every second; ERROR with a traceback is a bug or a lost turn.
"""
from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

run_id_var: ContextVar[str | None] = ContextVar("chat_run_id", default=None)
conversation_id_var: ContextVar[int | None] = ContextVar("chat_conversation_id", default=None)
user_id_var: ContextVar[int | None] = ContextVar("chat_user_id", default=None)
error_code_var: ContextVar[str | None] = ContextVar("chat_error_code", default=None)


def turn_context_set(*, run_id: str, conversation_id: int, user_id: int) -> None:
    """Called at the start of a run's task (its own context: nothing leaks to other runs or requests)."""
    run_id_var.set(run_id)
    conversation_id_var.set(conversation_id)
    user_id_var.set(user_id)
    error_code_var.set(None)


class RunContextFilter(logging.Filter):
    """Adds run_id, conversation_id, user_id and error_code to every record (None outside a turn)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.run_id = run_id_var.get()
        record.conversation_id = conversation_id_var.get()
        record.user_id = user_id_var.get()
        record.error_code = error_code_var.get()
        return True


class JsonFormatter(_JsonFormatter):
    """One JSON object a line: time, level, logger, message, the turn's ids, and any `extra=` fields."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", "%(asctime)s %(levelname)s %(name)s %(message)s")
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", False)
        super().__init__(*args, **kwargs)


def describe(exc: BaseException) -> str:
    """`Type: message` of an exception, for a one-line warning (drivers' messages name hosts, never passwords)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


class Throttled:
    """A recoverable condition that may recur every second: one WARNING line (no traceback) at most every `interval`
    seconds, counting the recurrences it folded in; `recovered()` notes the end in one INFO line. (With
    `level=logging.ERROR, traceback=True`: a bug that would recur as often, its traceback once per interval.)"""

    def __init__(self, logger: logging.Logger, interval: float = 60.0, *, level: int = logging.WARNING,
                 traceback: bool = False) -> None:
        self.logger = logger
        self.interval = interval
        self.level = level
        self.traceback = traceback
        self._next = 0.0  # time.monotonic() from which the next warning is written
        self._folded = 0  # recurrences since the last line written
        self._failing = False

    def warning(self, msg: str, *args: object, exc: BaseException | None = None) -> None:
        """Log `msg % args` (and `describe(exc)`, or its traceback) unless a line went out less than `interval` s ago."""
        self._failing = True
        now = time.monotonic()
        if now < self._next:
            self._folded += 1
            return
        if exc is not None and not self.traceback:
            msg, args = f"{msg}: %s", (*args, describe(exc))
        if self._folded:
            msg, args = f"{msg} (%d more in the last %.0f s)", (*args, self._folded, self.interval)
        self.logger.log(self.level, msg, *args, exc_info=exc if self.traceback else None, stacklevel=2)
        self._next, self._folded = now + self.interval, 0

    def recovered(self, msg: str, *args: object) -> None:
        """After warnings: one INFO line saying the condition ended; the next failure is reported at once."""
        if self._failing:
            self._failing, self._next, self._folded = False, 0.0, 0
            self.logger.info(msg, *args, stacklevel=2)
