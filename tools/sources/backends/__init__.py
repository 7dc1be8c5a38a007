"""Search backends, chosen by dotted path (`Source.backend`), else by the database: PostgreSQL full-text search on
PostgreSQL, SQLite FTS5 on SQLite."""
from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from tools.sources.backends.base import SearchBackend

DEFAULTS = {
    "postgresql": "tools.sources.backends.postgres.PostgresBackend",
    "sqlite": "tools.sources.backends.sqlite.SqliteBackend",
}


def default_path(vendor: str) -> str:
    """The backend a database gets when a source names none; "" when there is none for it."""
    return DEFAULTS.get(vendor, "")


@cache
def backend_get(path: str) -> SearchBackend:
    """One instance per dotted path (backends keep no per-request state)."""
    return import_string(path)()  # type: ignore[no-any-return]
