"""PostgreSQL full-text search: one table of weighted tsvectors (GIN index) per (source, object pk); ts_rank with
weights; the scope is a condition of the same SELECT.

What keeps it fast at 100,000 objects: a row holds only the vector (the searched text is the model's, not copied, so a
row stays small and uncompressed); the scope is compared in the primary key's own type, so it probes the model's
primary-key index instead of hashing the whole scope as text; and which terms each object matched is read for the
ranked candidates only, not for every match."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tools.sources.backends.base import CANDIDATES, Row, SearchBackend
from tools.sources.ranking import Ranked

TABLE = "pagechat_source_vector"
OLD_TABLES = ("pagechat_source_doc",)  # earlier layouts (they kept a copy of the text): dropped, sources_sync refills
RANK_WEIGHTS = "{0.05,0.1,0.4,1.0}"  # ts_rank's order: D, C, B, A


class PostgresBackend(SearchBackend):
    vendor = "postgresql"
    coverage_power = 2  # ts_rank has no IDF: coverage (IDF-weighted) counts twice
    config = "english"  # the text search configuration (stemming, stopwords)

    def install(self, connection: Any) -> None:
        with connection.cursor() as cursor:
            for old in OLD_TABLES:
                cursor.execute(f"DROP TABLE IF EXISTS {old}")
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (source varchar(100) NOT NULL, object_pk varchar(255) NOT NULL, "
                           "vector tsvector NOT NULL, PRIMARY KEY (source, object_pk))")
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_vector ON {TABLE} USING GIN (vector)")

    def index(self, connection: Any, source: str, rows: Iterable[Row]) -> None:
        values = [(source, pk, a, b, c, d) for pk, (a, b, c, d) in rows]
        if not values:
            return
        vector = " || ".join(f"setweight(to_tsvector('{self.config}', %s), '{w}')" for w in "ABCD")
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {TABLE} (source, object_pk, vector) VALUES (%s, %s, {vector}) "
                "ON CONFLICT (source, object_pk) DO UPDATE SET vector = EXCLUDED.vector",
                values)

    def rebuilt(self, connection: Any, source: str) -> None:
        with connection.cursor() as cursor:  # the planner's statistics for the new rows (autovacuum would, later)
            cursor.execute(f"ANALYZE {TABLE}")

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
               candidates: int = CANDIDATES, pk_type: str = "") -> Ranked:
        c = self.config
        # plainto_tsquery parses each term as plain words: user text never becomes tsquery syntax
        each = [f"plainto_tsquery('{c}', %s)" for _ in terms]
        any_term = "(" + " || ".join(each) + ")"
        key = f"CAST(d.object_pk AS {pk_type})" if pk_type else "d.object_pk"
        # the scope is a condition of the inner SELECT: objects outside it are never ranked, limited or returned;
        # the outer one reads which terms each of the (at most `candidates`) ranked objects matched
        flags = ", ".join(f"r.vector @@ {q}" for q in each)
        sql = (f"SELECT r.object_pk, r.rank, {flags} FROM ("
               f"SELECT d.object_pk, d.vector, ts_rank('{RANK_WEIGHTS}'::float4[], d.vector, {any_term}) AS rank "
               f"FROM {TABLE} d WHERE d.source = %s AND d.vector @@ {any_term} AND {key} IN ({scope_sql}) "
               f"ORDER BY rank DESC, d.object_pk LIMIT {int(candidates)}) r ORDER BY r.rank DESC, r.object_pk")
        params = [*terms, *terms, source, *terms, *scope_params]  # in the order of the placeholders
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return [(str(r[0]), float(r[1]), frozenset(t for t, hit in zip(terms, r[2:]) if hit)) for r in rows]
