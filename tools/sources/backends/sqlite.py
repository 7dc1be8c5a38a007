"""SQLite FTS5: one FTS5 table (porter stemming, columns by weight) and a key table mapping its rowids to
(source, object pk); bm25 with column weights; the scope is a condition of the same SELECT."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tools.sources.backends.base import CANDIDATES, Row, SearchBackend
from tools.sources.ranking import Ranked

FTS = "pagechat_source_fts"
KEYS = "pagechat_source_key"
BM25_WEIGHTS = (10.0, 4.0, 1.0, 0.5)  # A (a title), B, C, D


class SqliteBackend(SearchBackend):
    vendor = "sqlite"
    coverage_power = 1  # bm25 already weighs terms by IDF

    def install(self, connection: Any) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {KEYS} (id INTEGER PRIMARY KEY, source TEXT NOT NULL, "
                           "object_pk TEXT NOT NULL, UNIQUE (source, object_pk))")
            cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS} USING fts5(a, b, c, d, tokenize='porter unicode61')")

    def index(self, connection: Any, source: str, rows: Iterable[Row]) -> None:
        with connection.cursor() as cursor:
            for pk, (a, b, c, d) in rows:
                cursor.execute(f"SELECT id FROM {KEYS} WHERE source = %s AND object_pk = %s", [source, pk])
                found = cursor.fetchone()
                if found is None:
                    cursor.execute(f"INSERT INTO {KEYS} (source, object_pk) VALUES (%s, %s)", [source, pk])
                    rowid = cursor.lastrowid
                else:
                    rowid = found[0]
                    cursor.execute(f"DELETE FROM {FTS} WHERE rowid = %s", [rowid])
                cursor.execute(f"INSERT INTO {FTS} (rowid, a, b, c, d) VALUES (%s, %s, %s, %s, %s)", [rowid, a, b, c, d])

    def remove(self, connection: Any, source: str, pks: Sequence[str]) -> None:
        with connection.cursor() as cursor:
            for pk in pks:
                cursor.execute(f"SELECT id FROM {KEYS} WHERE source = %s AND object_pk = %s", [source, pk])
                found = cursor.fetchone()
                if found is not None:
                    cursor.execute(f"DELETE FROM {FTS} WHERE rowid = %s", [found[0]])
                    cursor.execute(f"DELETE FROM {KEYS} WHERE id = %s", [found[0]])

    def clear(self, connection: Any, source: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {FTS} WHERE rowid IN (SELECT id FROM {KEYS} WHERE source = %s)", [source])
            cursor.execute(f"DELETE FROM {KEYS} WHERE source = %s", [source])

    def count(self, connection: Any, source: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {KEYS} WHERE source = %s", [source])
            return int(cursor.fetchone()[0])

    def search(self, connection: Any, source: str, terms: list[str], scope_sql: str, scope_params: Sequence[Any],
               candidates: int = CANDIDATES, pk_type: str = "") -> Ranked:
        # terms are [a-z0-9-] only (ranking.query_terms), each quoted as an FTS5 string: user text never becomes FTS syntax
        quoted = [f'"{t}"' for t in terms]
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        # the scope is a condition of this SELECT: objects outside it are never ranked, limited or returned. Compared in
        # the primary key's own type, the scope is probed through the model's primary key instead of being copied
        # into a temporary index of every object it selects (as text) on each search.
        key = f"CAST(k.object_pk AS {pk_type})" if pk_type else "k.object_pk"
        base = (f"FROM {FTS} JOIN {KEYS} k ON k.id = {FTS}.rowid WHERE {FTS} MATCH %s AND k.source = %s "
                f"AND {key} IN ({scope_sql})")
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT k.id, k.object_pk, -bm25({FTS}, {weights}) AS rank {base} ORDER BY rank DESC, k.object_pk "
                           f"LIMIT {int(candidates)}", [" OR ".join(quoted), source, *scope_params])
            rows = cursor.fetchall()
            if not rows:
                return []
            matched: dict[int, set[str]] = {}
            ids = ", ".join(str(int(r[0])) for r in rows)
            for term, q in zip(terms, quoted):
                # `+rowid`: the candidates filter the term's one pass over its postings; a plain `rowid IN` would make
                # FTS5 look the term up again for every candidate (ten times slower at 100,000 objects)
                cursor.execute(f"SELECT rowid FROM {FTS} WHERE {FTS} MATCH %s AND +rowid IN ({ids})", [q])
                for (rowid,) in cursor.fetchall():
                    matched.setdefault(rowid, set()).add(term)
        return [(str(pk), float(rank), frozenset(matched.get(rowid, ()))) for rowid, pk, rank in rows]
