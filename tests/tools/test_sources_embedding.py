"""The embedding backend (tools.sources.backends.embedding) on a real PostgreSQL 16 with the real pgvector, and the
embedders (tools.sources.embedders).

How the database is reached without disturbing the rest of the suite: a session fixture starts a throwaway server
(the `pgserver` package: PostgreSQL with pgvector, in a temporary directory) and a module fixture adds it to Django as
a second database alias, `vectors`, migrated like any database; only these tests name it
(`django_db(databases=["default", "vectors"])`, each test rolled back on both). The demo's models live on that alias
for these tests, and the sources under test are the demo's sources with this backend and their scopes read through
the alias (`v_articles`, `v_streams`, `v_reports`, registered for this module only). Every other test keeps its
SQLite (or DATABASE_URL) database and never starts the server. Without `pgserver` installed these tests skip.
(Run as root, pgserver runs the server as a `pgserver` system user, which it creates.)"""
from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from chat.agent.types import ToolContext
from pages.demo.models import Report, ResearchStream
from pages.demo.sources import ARTICLES, REPORTS, STREAMS, articles_scope, reports_scope, streams_scope
from tools.registry import ToolRegistry
from tools.sources.backends.embedding import EmbeddingBackend
from tools.sources.embedders import embedder_get
from tools.sources.embedders.base import EmbeddingError
from tools.sources.embedders.hashing import HashingEmbedder
from tools.sources.embedders.http import HttpEmbedder
from tools.sources.index import backend_for
from tools.sources.registry import registry
from tools.sources.search import source_search
from tools.sources.spec import Source
from tools.sources.tool import source_tool_spec

ALIAS = "vectors"
BACKEND = "tools.sources.backends.embedding.EmbeddingBackend"
SECRET = "Xylophage"  # a word only alice's objects have: it must never reach demo


def on_vectors(test: Any) -> Any:
    """A test on the `vectors` database (the server is started only for these: the embedders' tests need none)."""
    return pytest.mark.usefixtures("vectors_alias")(pytest.mark.django_db(databases=["default", ALIAS])(test))


def _on_alias(source: Source, scope: Any) -> Source:
    return dataclasses.replace(source, name=f"v_{source.name}", backend=BACKEND, offer_tool=False,
                               scope=lambda user, context: scope(user, context).using(ALIAS))


# one worker of a parallel run (pytest-xdist, --dist loadgroup) runs them all: one pgserver is started, not one a worker
pytestmark = pytest.mark.xdist_group("pgvector")

V_ARTICLES, V_STREAMS, V_REPORTS = (_on_alias(ARTICLES, articles_scope), _on_alias(STREAMS, streams_scope), _on_alias(REPORTS, reports_scope))


@pytest.fixture(scope="session")
def pgvector_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A PostgreSQL server with pgvector for this session: its Django settings for a database with the extension."""
    pgserver = pytest.importorskip("pgserver", reason="pgserver (a PostgreSQL with pgvector for tests) is not installed: pip install -e '.[test]'")
    import psycopg

    server = pgserver.get_server(tmp_path_factory.mktemp("pgvector") / "data", cleanup_mode="delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS pagechat_vectors")
        conn.execute("CREATE DATABASE pagechat_vectors")
    with psycopg.connect(server.get_uri("pagechat_vectors"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    socket_dir = server.get_postmaster_info().socket_dir
    yield {"ENGINE": "django.db.backends.postgresql", "NAME": "pagechat_vectors", "USER": "postgres", "PASSWORD": "",
           "HOST": str(socket_dir), "PORT": ""}
    server.cleanup()


@pytest.fixture(scope="module")
def vectors_alias(pgvector_server: dict[str, Any], django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """The `vectors` alias, migrated (the demo corpus comes with its data migration), with the v_ sources indexed."""
    configured = connections.configure_settings({"default": dict(connections.settings["default"]), ALIAS: dict(pgvector_server)})
    connections.settings[ALIAS] = configured[ALIAS]
    tools = ToolRegistry()
    with django_db_blocker.unblock():
        call_command("migrate", database=ALIAS, verbosity=0)
        _load_corpus()  # the data migration loads it into the default database only
        for source in (V_ARTICLES, V_STREAMS, V_REPORTS):
            registry.register(source, tools=tools, origin="tests/tools/test_sources_embedding.py")
        call_command("chat_sources_rebuild", V_ARTICLES.name, database=ALIAS, stdout=open("/dev/null", "w"))
    try:
        yield
    finally:
        for source in (V_ARTICLES, V_STREAMS, V_REPORTS):
            registry.unregister(source.name, tools=tools)
        connections[ALIAS].close()
        del connections[ALIAS]
        del connections.settings[ALIAS]


def _load_corpus() -> None:
    import datetime as dt

    from pages.demo.data import ARTICLE_FIELDS, read_corpus
    from pages.demo.models import Article

    if not Article.objects.using(ALIAS).exists():
        Article.objects.using(ALIAS).bulk_create([Article(**{name: r[name] for name in ARTICLE_FIELDS},
                                                          published_date=dt.date.fromisoformat(r["published_date"])) for r in read_corpus()])


@pytest.fixture
def two_users(django_user_model: Any) -> tuple[Any, Any]:
    """demo and alice on the vectors database, each with a stream about CRISPR delivery; alice's carries SECRET."""
    users = django_user_model.objects.db_manager(ALIAS)
    demo, alice = users.create_user(username="demo", password="pw"), users.create_user(username="alice", password="pw")
    streams = ResearchStream.objects.using(ALIAS)
    streams.create(owner=demo, name="CRISPR delivery watch", purpose="Lipid nanoparticle delivery of CRISPR editors")
    hers = streams.create(owner=alice, name=f"{SECRET} CRISPR delivery", purpose=f"{SECRET} vectors for CRISPR delivery")
    Report.objects.using(ALIAS).create(stream=hers, title=f"{SECRET} report on CRISPR delivery", summary=f"{SECRET} capsids deliver CRISPR")
    return demo, alice


def _search(source: Source, user: Any, query: str, limit: int = 8) -> list[Any]:
    return source_search(source, user=user, context={}, query=query, limit=limit)


def _titles(source: Source, user: Any, query: str, limit: int = 8) -> list[str]:
    return [h.title for h in _search(source, user, query, limit)]


@on_vectors
def test_objects_are_indexed_one_vector_each_with_an_hnsw_index(two_users: tuple[Any, Any]) -> None:
    backend = backend_for(V_STREAMS, ALIAS)
    assert isinstance(backend, EmbeddingBackend)
    conn = connections[ALIAS]
    assert backend.count(conn, "v_streams") == 2 and backend.count(conn, "v_articles") == V_ARTICLES.model._default_manager.using(ALIAS).count() > 300
    with conn.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = %s", [backend.table()])
        assert any("hnsw" in d and "vector_cosine_ops" in d for (d,) in cursor.fetchall())
        cursor.execute(f"SELECT vector_dims(embedding) FROM {backend.table()} WHERE source = 'v_streams'")
        assert {d for (d,) in cursor.fetchall()} == {512}


@on_vectors
def test_scope_is_applied_inside_the_search_for_two_users(two_users: tuple[Any, Any]) -> None:
    demo, alice = two_users
    assert _titles(V_STREAMS, demo, "CRISPR delivery") == ["CRISPR delivery watch"]
    assert _titles(V_STREAMS, alice, "CRISPR delivery") == [f"{SECRET} CRISPR delivery"]
    # a query only alice's objects match: nothing for demo, even asking for many results
    assert _search(V_STREAMS, demo, SECRET, limit=50) == [] and _search(V_REPORTS, demo, SECRET, limit=50) == []
    assert len(_search(V_STREAMS, alice, SECRET)) == 1 and len(_search(V_REPORTS, alice, SECRET)) == 1


@on_vectors
def test_the_scope_cannot_be_starved_by_the_index_scan(django_user_model: Any) -> None:
    """Alice's 40 nearer neighbours fill the HNSW scan's candidates (ef_search 1, the index forced): the scope drops
    them all, and the exact search over demo's own rows still finds his one object; alice's never come back."""
    users = django_user_model.objects.db_manager(ALIAS)
    demo, alice = users.create_user(username="demo"), users.create_user(username="alice")
    streams = ResearchStream.objects.using(ALIAS)
    for i in range(40):
        streams.create(owner=alice, name=f"Zebrafish zebrafish {i}", purpose="zebrafish zebrafish zebrafish")
    mine = streams.create(owner=demo, name="Fish models", purpose="zebrafish larvae")
    backend = EmbeddingBackend()
    backend.ef_search = 1
    conn = connections[ALIAS]
    sql, params = streams.filter(owner=demo).values("pk").query.sql_with_params()
    with conn.cursor() as cursor, CaptureQueriesContext(conn) as queries:
        # the planner takes the HNSW index (an ordered scan) even on a small table
        cursor.execute("SET enable_seqscan = off; SET enable_sort = off")
        try:
            ranked = backend.search(conn, "v_streams", ["zebrafish"], sql, params, candidates=1, pk_type="bigint")
        finally:
            cursor.execute("RESET enable_seqscan; RESET enable_sort")
    assert [pk for pk, _, _ in ranked] == [str(mine.pk)]
    # the index scan was starved (alice's nearer row taken, then dropped by the scope) and the exact search ran
    assert any("MATERIALIZED" in q["sql"] for q in queries.captured_queries)
    assert _titles(V_STREAMS, demo, "zebrafish", limit=1) == ["Fish models"]


@on_vectors
def test_index_follows_save_and_delete_and_the_rebuild_command(two_users: tuple[Any, Any]) -> None:
    demo, _ = two_users
    stream = ResearchStream.objects.using(ALIAS).get(owner=demo)
    stream.name, stream.purpose = "Quokka behaviour", "Quokka social behaviour on Rottnest"
    stream.save(using=ALIAS)
    assert _titles(V_STREAMS, demo, "quokka") == ["Quokka behaviour"]
    stream.delete(using=ALIAS)
    assert _search(V_STREAMS, demo, "quokka") == []
    # bulk writes send no signals: the rebuild command indexes them
    ResearchStream.objects.using(ALIAS).bulk_create([ResearchStream(owner=demo, name="Axolotl regeneration", purpose="axolotl limbs")])
    assert _search(V_STREAMS, demo, "axolotl") == []
    call_command("chat_sources_rebuild", "v_streams", database=ALIAS, stdout=open("/dev/null", "w"))
    assert _titles(V_STREAMS, demo, "axolotl") == ["Axolotl regeneration"]


@on_vectors
def test_precision_of_the_top_8_on_the_demo_queries() -> None:
    """search_quality through the articles source on this backend with the (lexical) hashing embedder."""
    from django.contrib.auth.models import User

    from pages.demo.search_quality import quality_measure

    reader = User(username="reader")
    report = quality_measure(lambda query, limit: [h.obj for h in _search(V_ARTICLES, reader, query, limit)])
    assert report.precision >= 0.95, report.rows  # 0.976 when measured; the full-text backends' 0.953
    assert report.filled >= 0.45, report.rows  # but it returns fewer: 0.51 of the 8 slots filled with relevant articles
    assert report.no_match_correct == report.no_match_total, report.rows


@on_vectors
def test_the_search_tool_never_cites_or_counts_alices_objects_for_demo(two_users: tuple[Any, Any]) -> None:
    demo, alice = two_users
    for source, question in ((V_STREAMS, "vectors for CRISPR delivery"), (V_REPORTS, "capsids deliver CRISPR"), (V_STREAMS, SECRET)):
        result = source_tool_spec(source).executor({"query": question, "limit": 50}, ToolContext(user=demo, services={}))
        shown = result.text + json.dumps(result.sources or [])
        assert SECRET not in shown.replace(repr(question), ""), question  # never searched, cited or counted
        assert all(s["title"] == "CRISPR delivery watch" for s in result.sources or [])
        assert "Found 2" not in result.text
    theirs = source_tool_spec(V_REPORTS).executor({"query": "capsids deliver CRISPR"}, ToolContext(user=alice, services={}))
    assert [s["title"] for s in theirs.sources] == [f"{SECRET} report on CRISPR delivery"]


@on_vectors
def test_a_changed_embedder_leaves_the_old_vectors_out_until_rebuilt(two_users: tuple[Any, Any]) -> None:
    """Rows made by another embedder are not searched (they are stale), and do not count: migrate refills them."""
    demo, _ = two_users
    backend = backend_for(V_STREAMS, ALIAS)
    assert backend is not None
    with connections[ALIAS].cursor() as cursor:
        cursor.execute(f"UPDATE {EmbeddingBackend().table()} SET embedder = 'another' WHERE source = 'v_streams'")
    assert backend.count(connections[ALIAS], "v_streams") == 0 and _search(V_STREAMS, demo, "CRISPR delivery") == []
    call_command("chat_sources_rebuild", "v_streams", database=ALIAS, stdout=open("/dev/null", "w"))
    assert _titles(V_STREAMS, demo, "CRISPR delivery") == ["CRISPR delivery watch"]


# ---- embedders ----

def test_the_hashing_embedder_is_deterministic_normalised_and_lexical() -> None:
    e = HashingEmbedder()
    a, b, c, empty = e.embed(["Delivering CRISPR editors", "CRISPR delivery of editors", "medieval poetry manuscripts", "the of"])
    assert a == e.embed(["Delivering CRISPR editors"])[0] and len(a) == e.dimensions == 512
    assert abs(sum(x * x for x in a) - 1.0) < 1e-9 and not any(empty)

    def cosine(x: list[float], y: list[float]) -> float:
        return sum(p * q for p, q in zip(x, y))

    assert cosine(a, b) > 0.5 > e.min_similarity > cosine(a, c)


class _Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings that answers with the hashing embedder's vectors (or an error)."""

    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        payload: dict[str, Any]
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.headers.get("Authorization") != "Bearer sk-test-secret":
            payload, status = {"error": {"message": f"Incorrect API key provided: {self.headers.get('Authorization')}",
                                         "type": "invalid_request_error", "code": "invalid_api_key"}}, 401
        else:
            vectors = HashingEmbedder().embed(body["input"])
            payload, status = {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": v}
                                                          for i, v in reversed(list(enumerate(vectors)))]}, 200
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Embeddings.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_http_embedder_talks_to_an_openai_compatible_server(embeddings_server: str) -> None:
    e = HttpEmbedder(url=embeddings_server, model="tiny-embed", key="sk-test-secret")
    vectors = e.embed(["CRISPR delivery", "zebrafish"])
    assert vectors == HashingEmbedder().embed(["CRISPR delivery", "zebrafish"])  # in the order asked, though answered reversed
    assert e.dimensions == 512
    sent = _Embeddings.seen[0]
    assert sent["path"] == "/v1/embeddings" and sent["auth"] == "Bearer sk-test-secret"
    assert sent["body"]["model"] == "tiny-embed" and sent["body"]["input"] == ["CRISPR delivery", "zebrafish"] and "dimensions" not in sent["body"]
    HttpEmbedder(url=embeddings_server, model="tiny-embed", key="sk-test-secret", dimensions=512).embed(["x"])
    assert _Embeddings.seen[-1]["body"]["dimensions"] == 512
    assert "sk-test" not in repr(e)


def test_the_http_embedders_errors_never_carry_the_key(embeddings_server: str, caplog: pytest.LogCaptureFixture) -> None:
    """The server quotes the wrong key in its error message: the error says the status and code, never the key."""
    wrong = HttpEmbedder(url=embeddings_server, model="tiny-embed", key="sk-wrong-key-1234")
    with pytest.raises(EmbeddingError) as raised:
        wrong.embed(["CRISPR"])
    assert "401" in str(raised.value) and "invalid_api_key" in str(raised.value)
    assert "sk-wrong" not in str(raised.value) and "sk-wrong" not in repr(raised.value) and "sk-wrong" not in caplog.text
    with pytest.raises(EmbeddingError) as unreachable:
        HttpEmbedder(url="http://user:sk-in-url@127.0.0.1:9/v1", model="m", key="sk-wrong-key-1234", timeout=2).embed(["x"])
    assert "sk-" not in str(unreachable.value) and "127.0.0.1:9" in str(unreachable.value)


@on_vectors
def test_the_backend_searches_through_the_http_embedder(two_users: tuple[Any, Any], embeddings_server: str) -> None:
    """CHAT_EMBEDDER=openai: the same backend with vectors from the server (a rebuild makes them: another embedder)."""
    demo, alice = two_users
    with override_settings(CHAT_EMBEDDER="openai", CHAT_EMBEDDINGS_URL=embeddings_server, CHAT_EMBEDDINGS_MODEL="tiny-embed",
                           CHAT_EMBEDDINGS_API_KEY="sk-test-secret"):
        assert isinstance(embedder_get(), HttpEmbedder)
        assert _search(V_STREAMS, demo, "CRISPR delivery") == []  # the vectors are the hashing embedder's: stale
        call_command("chat_sources_rebuild", "v_streams", database=ALIAS, stdout=open("/dev/null", "w"))
        assert _titles(V_STREAMS, demo, "CRISPR delivery") == ["CRISPR delivery watch"]
        assert _search(V_STREAMS, demo, SECRET) == [] and len(_search(V_STREAMS, alice, SECRET)) == 1
    assert isinstance(embedder_get(), HashingEmbedder)


@on_vectors
def test_a_failing_embeddings_service_never_fails_the_save(two_users: tuple[Any, Any], embeddings_server: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    """The host's save stands; the object's old entry goes (its old words are not found), the warning names it without
    the key, and the rebuild indexes it once the service answers."""
    demo, _ = two_users
    stream = ResearchStream.objects.using(ALIAS).get(owner=demo)
    with override_settings(CHAT_EMBEDDER="openai", CHAT_EMBEDDINGS_URL="http://127.0.0.1:9/v1", CHAT_EMBEDDINGS_MODEL="m",
                           CHAT_EMBEDDINGS_API_KEY="sk-unreachable-secret", CHAT_EMBEDDINGS_TIMEOUT=2,
                           CHAT_EMBEDDINGS_DIMENSIONS=512):  # the size known: the entry's table is found without the service
        stream.name = "Okapi field notes"
        stream.save(using=ALIAS)  # no exception
    assert ResearchStream.objects.using(ALIAS).get(pk=stream.pk).name == "Okapi field notes"
    assert _search(V_STREAMS, demo, "CRISPR delivery") == [] and _search(V_STREAMS, demo, "okapi") == []
    assert "not indexed" in caplog.text and "chat_sources_rebuild v_streams" in caplog.text and "sk-unreachable" not in caplog.text
    call_command("chat_sources_rebuild", "v_streams", database=ALIAS, stdout=open("/dev/null", "w"))
    assert _titles(V_STREAMS, demo, "okapi") == ["Okapi field notes"]


def test_check_reports_the_embedding_backend_on_sqlite() -> None:
    """The backend runs on PostgreSQL only: on another default database `check` says so (tools.E024)."""
    from tools.sources.checks import source_problems
    from tools.sources.registry import SourceRegistry

    if connections["default"].vendor == "postgresql":
        pytest.skip("the default database is PostgreSQL")
    sources, tools = SourceRegistry(), ToolRegistry()
    sources.register(dataclasses.replace(STREAMS, name="t_vec", backend=BACKEND), tools=tools, origin="here:1")
    sources.register(dataclasses.replace(STREAMS, name="t_vec_any", backend=f"{__name__}.AnyDatabaseEmbedding"), tools=tools, origin="here:2")
    try:
        assert [e.id for e in source_problems(sources)] == ["tools.E024"]
        with override_settings(CHAT_EMBEDDER="no.such.Embedder"):  # and a CHAT_EMBEDDER that does not import
            assert [e.id for e in source_problems(sources)] == ["tools.E024", "tools.E025"]
    finally:
        sources.unregister("t_vec", tools=tools)
        sources.unregister("t_vec_any", tools=tools)


class AnyDatabaseEmbedding(EmbeddingBackend):
    vendor = ""  # claims any database: only the embedder is checked
