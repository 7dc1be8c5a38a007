"""The contract of a search backend: its index tables, keeping them current, and a ranked search that applies the
user's scope INSIDE the query (the caller passes the scope as SQL; a backend never filters after ranking)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tools.sources.ranking import Ranked, relevant

Row = tuple[str, tuple[str, str, str, str]]  # (object pk as text, searchable text by weight A..D)
CANDIDATES = 500  # rows the database ranks before the relevance threshold


class SearchBackend:
    """Subclass and name it by dotted path in `Source.backend`. Every method takes the connection to use."""

    vendor = ""  # the database it runs on (checked by `manage.py check`)
    coverage_power = 1  # how much term coverage re-weighs the rank (2 where the rank has no IDF of its own)

    def install(self, connection: Any) -> None:
        """Create the index tables if they are missing (idempotent)."""
        raise NotImplementedError

    def index(self, connection: Any, source: str, rows: Iterable[Row]) -> None:
        """Insert or replace these objects' entries."""
        raise NotImplementedError

    def rebuilt(self, connection: Any, source: str) -> None:
        """After a source's entries were all written again (the rebuild command): refresh statistics, if any."""

    def remove(self, connection: Any, source: str, pks: Sequence[str]) -> None:
        raise NotImplementedError

    def clear(self, connection: Any, source: str) -> None:
        raise NotImplementedError

    def count(self, connection: Any, source: str) -> int:
        raise NotImplementedError

    def search(self, connection: Any, source: str, terms: list[str], scope_sql: str, scope_params: Sequence[Any],
               candidates: int = CANDIDATES, pk_type: str = "") -> Ranked:
        """Ranked matches of any of `terms` among the objects `scope_sql` selects (a SELECT of one column: the pk in
        the database type `pk_type`, which the index's text pk is cast to; "" means the SELECT gives the pk as text),
        best first, each with the terms it matched. At most `candidates` rows."""
        raise NotImplementedError

    def relevant(self, ranked: Ranked, terms: list[str], total: int) -> Ranked:
        """The good matches of `search`'s answer, best first (`total`: the scope's size). By default the shared
        threshold on the terms each object matched (ranking.relevant)."""
        return relevant(ranked, terms, total, coverage_power=self.coverage_power)
