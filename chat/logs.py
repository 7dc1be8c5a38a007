"""Structured logs: every line a turn writes carries its run id, conversation id, user id (and error code once it
failed), from context variables the turn sets; `JsonFormatter` (python-json-logger) writes one JSON object a line.

LOGGING = {..., "filters": {"chat": {"()": "chat.logs.RunContextFilter"}},
           "formatters": {"json": {"()": "chat.logs.JsonFormatter"}}, ...}   (config/settings.py does this)

Nothing here logs message text; the turn's own lines carry ids, codes, counts and timings only.
"""
from __future__ import annotations

import logging
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
