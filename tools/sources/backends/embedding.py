"""Embeddings in PostgreSQL with pgvector: one vector per (source, object pk) made by the configured embedder
(CHAT_EMBEDDER), nearest neighbours by cosine distance through an HNSW index; the scope is a condition of the same
SELECT. Opt in per source: `Source(backend="tools.sources.backends.embedding.EmbeddingBackend")`.

Its table (one per vector size, `pagechat_source_embedding_<dims>`) is made by `install`, like the other backends'
(after migrate, and by `chat_sources_rebuild`), never by a migration: a database without pgvector migrates as before,
and only a site that names this backend needs the extension (`install` creates it, or says who must).

No starvation by the scope: pgvector's HNSW scan (0.6) yields at most `hnsw.ef_search` rows BEFORE the WHERE clause
drops the out-of-scope ones, so a user whose objects are few among many could get fewer results than exist. When the
index scan returns fewer rows than asked, the search is repeated exactly over the user's scoped rows (a MATERIALIZED
CTE the index cannot reorder), so a scoped-out object never takes a scoped-in one's place and a short answer is true."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, transaction

from tools.sources.backends.base import CANDIDATES, Row, SearchBackend
from tools.sources.embedders import embedder_get
from tools.sources.embedders.base import Embedder, normalised
from tools.sources.ranking import Ranked

PREFIX = "pagechat_source_embedding"
COLUMN_WEIGHTS = (1.0, 0.6, 0.35, 0.2)  # A (a title) .. D: an object's vector is its fields' vectors so weighted
MAX_CANDIDATES = 100  # nearest rows read per search (there is no "does not match": every object has a distance)
RELATIVE_MARGIN = 0.5  # and a match must be at least this share of the best match's similarity
EXTENSION_HINT = ("the embedding backend needs the pgvector extension: install it on the database server and run "
                  "`CREATE EXTENSION vector;` as a superuser in this database (docs/sources.md)")


def literal(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(f"{x:.6g}" for x in vector) + "]"


class EmbeddingBackend(SearchBackend):
    vendor = "postgresql"
    uses_embedder = True  # `check` verifies CHAT_EMBEDDER (tools.E025)
    ef_search = 200  # HNSW candidates per index scan (pgvector's default is 40)

    def embedder(self) -> Embedder:
        return embedder_get()

    def table(self) -> str:
        return f"{PREFIX}_{int(self.embedder().dimensions)}"

    def install(self, connection: Any) -> None:
        table, dims = self.table(), int(self.embedder().dimensions)
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            if cursor.fetchone() is None:
                try:
                    with transaction.atomic(using=connection.alias):
                        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except DatabaseError as exc:
                    raise ImproperlyConfigured(f"{EXTENSION_HINT} ({type(exc).__name__})") from None
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {table} (source varchar(100) NOT NULL, object_pk varchar(255) NOT NULL, "
                           f"embedder varchar(200) NOT NULL, embedding vector({dims}) NOT NULL, PRIMARY KEY (source, object_pk))")
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")

    def vectors(self, rows: list[Row]) -> list[list[float]]:
        """Each row's vector: its weighted fields' vectors summed (one embedder call for the whole batch)."""
        texts = [(i, w, text) for i, (_, columns) in enumerate(rows) for w, text in enumerate(columns) if text.strip()]
        embedded = self.embedder().embed([text for _, _, text in texts]) if texts else []
        sums = [[0.0] * self.embedder().dimensions for _ in rows]
        for (i, w, _), vector in zip(texts, embedded):
            sums[i] = [s + COLUMN_WEIGHTS[w] * x for s, x in zip(sums[i], vector)]
        return [normalised(v) for v in sums]

    def index(self, connection: Any, source: str, rows: Iterable[Row]) -> None:
        rows = list(rows)
        if not rows:
            return
        name = self.embedder().name
        values = [(source, pk, name, literal(vector)) for (pk, _), vector in zip(rows, self.vectors(rows))]
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {self.table()} (source, object_pk, embedder, embedding) VALUES (%s, %s, %s, %s::vector) "
                "ON CONFLICT (source, object_pk) DO UPDATE SET embedder = EXCLUDED.embedder, embedding = EXCLUDED.embedding",
                values)

    def rebuilt(self, connection: Any, source: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {self.table()}")

    def remove(self, connection: Any, source: str, pks: Sequence[str]) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {self.table()} WHERE source = %s AND object_pk = ANY(%s)", [source, list(pks)])

    def clear(self, connection: Any, source: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {self.table()} WHERE source = %s", [source])

    def count(self, connection: Any, source: str) -> int:
        """Entries made by the current embedder (another one's are stale: after migrate an index of 0 is refilled)."""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {self.table()} WHERE source = %s AND embedder = %s", [source, self.embedder().name])
            return int(cursor.fetchone()[0])

    def search(self, connection: Any, source: str, terms: list[str], scope_sql: str, scope_params: Sequence[Any],
               candidates: int = CANDIDATES, pk_type: str = "") -> Ranked:
        """The nearest objects to the query's terms among the scoped ones, as (pk, cosine similarity, no terms)."""
        query = self.embedder().embed([" ".join(terms)])[0]
        if not any(query):
            return []
        wanted = max(1, min(int(candidates), MAX_CANDIDATES))
        key = f"CAST(d.object_pk AS {pk_type})" if pk_type else "d.object_pk"
        scoped = f"FROM {self.table()} d WHERE d.source = %s AND d.embedder = %s AND {key} IN ({scope_sql})"
        params = [literal(query), source, self.embedder().name, *scope_params]
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL hnsw.ef_search = {max(int(self.ef_search), wanted)}")
            cursor.execute(f"SELECT d.object_pk, d.embedding <=> %s::vector AS distance {scoped} ORDER BY distance LIMIT {wanted}", params)
            rows = cursor.fetchall()
            if len(rows) < wanted:  # maybe starved by the scope (see the module's docstring): exactly, over the scoped rows
                cursor.execute(f"WITH scoped AS MATERIALIZED (SELECT d.object_pk, d.embedding {scoped}) "
                               f"SELECT object_pk, embedding <=> %s::vector AS distance FROM scoped ORDER BY distance, object_pk "
                               f"LIMIT {wanted}", [*params[1:], params[0]])
                rows = cursor.fetchall()
        return [(str(pk), 1.0 - float(distance), frozenset()) for pk, distance in rows]

    def relevant(self, ranked: Ranked, terms: list[str], total: int) -> Ranked:
        """Matches at least as similar as the embedder's threshold (CHAT_EMBEDDINGS_MIN_SIMILARITY overrides it) and
        within RELATIVE_MARGIN of the best; there are no matched terms to weigh."""
        from chat.conf import chat_settings

        floor = chat_settings.CHAT_EMBEDDINGS_MIN_SIMILARITY
        floor = self.embedder().min_similarity if floor is None else float(floor)
        kept = sorted((row for row in ranked if row[1] >= floor), key=lambda row: -row[1])
        return [row for row in kept if row[1] >= RELATIVE_MARGIN * kept[0][1]] if kept else []
