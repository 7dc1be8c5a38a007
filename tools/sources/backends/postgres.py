"""PostgreSQL full-text search: one table with a stored, weighted tsvector (GIN index) per (source, object pk);
ts_rank with weights; the scope is a condition of the same SELECT."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tools.sources.backends.base import CANDIDATES, Row, SearchBackend
from tools.sources.ranking import Ranked

TABLE = "pagechat_source_doc"
RANK_WEIGHTS = "{0.05,0.1,0.4,1.0}"  # ts_rank's order: D, C, B, A


class PostgresBackend(SearchBackend):
    vendor = "postgresql"
    coverage_power = 2  # ts_rank has no IDF: coverage (IDF-weighted) counts twice
    config = "english"  # the text search configuration (stemming, stopwords)

    def install(self, connection: Any) -> None:
        c = self.config
        vector = " || ".join(f"setweight(to_tsvector('{c}', {col}), '{col.upper()}')" for col in "abcd")
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (source varchar(100) NOT NULL, object_pk varchar(255) NOT NULL, "
                "a text NOT NULL DEFAULT '', b text NOT NULL DEFAULT '', c text NOT NULL DEFAULT '', d text NOT NULL DEFAULT '', "
                f"vector tsvector GENERATED ALWAYS AS ({vector}) STORED, PRIMARY KEY (source, object_pk))")
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_vector ON {TABLE} USING GIN (vector)")

    def index(self, connection: Any, source: str, rows: Iterable[Row]) -> None:
        values = [(source, pk, a, b, c, d) for pk, (a, b, c, d) in rows]
        if not values:
            return
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {TABLE} (source, object_pk, a, b, c, d) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (source, object_pk) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, c = EXCLUDED.c, d = EXCLUDED.d",
                values)

    def remove(self, connection: Any, source: str, pks: Sequence[str]) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {TABLE} WHERE source = %s AND object_pk = ANY(%s)", [source, list(pks)])

    def clear(self, connection: Any, source: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {TABLE} WHERE source = %s", [source])

    def count(self, connection: Any, source: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE source = %s", [source])
            return int(cursor.fetchone()[0])

    def search(self, connection: Any, source: str, terms: list[str], scope_sql: str, scope_params: Sequence[Any],
               candidates: int = CANDIDATES) -> Ranked:
        c = self.config
        # plainto_tsquery parses each term as plain words: user text never becomes tsquery syntax
        each = [f"plainto_tsquery('{c}', %s)" for _ in terms]
        any_term = "(" + " || ".join(each) + ")"
        flags = ", ".join(f"d.vector @@ {q}" for q in each)
        sql = (f"SELECT d.object_pk, ts_rank('{RANK_WEIGHTS}'::float4[], d.vector, {any_term}) AS rank, {flags} "
               f"FROM {TABLE} d WHERE d.source = %s AND d.vector @@ {any_term} AND d.object_pk IN ({scope_sql}) "
               f"ORDER BY rank DESC, d.object_pk LIMIT {int(candidates)}")
        params = [*terms, *terms, source, *terms, *scope_params]  # in the order of the placeholders
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return [(str(r[0]), float(r[1]), frozenset(t for t, hit in zip(terms, r[2:]) if hit)) for r in rows]
