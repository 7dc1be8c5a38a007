"""Sources (tools.sources): the declaration API and its checks, the index kept current, scoping inside the search on
every backend (two users: an object a user's scope excludes is never searched, cited, counted or summarised), and
citations in `complete.payload.sources` on the websocket and REST. The same tests run on PostgreSQL with
DATABASE_URL set (`pytest -m services`); by default on SQLite."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from chat.agent.types import ToolContext
from chat.models import Run
from pages.demo.models import Report, ResearchStream
from pages.demo.sources import ARTICLES, REPORTS, STREAMS
from tests.conftest import token_for, ws_connect
from tests.pages.demo.conftest import grant_demo_permissions
from tools.registry import ToolRegistry
from tools.sources.checks import source_problems
from tools.sources.citations import SourceMarkerFilter, markers_shown
from tools.sources.registry import SourceRegistry
from tools.sources.search import source_search
from tools.sources.spec import Source
from tools.sources.tool import source_tool_spec

SECRET = "Xylophage"  # a word only alice's stream has: it must never reach demo in any form


@pytest.fixture
def two_users(django_user_model: Any) -> tuple[Any, Any]:
    """demo and alice, each with a stream about CRISPR delivery; alice's carries SECRET in its name and purpose."""
    demo = grant_demo_permissions(django_user_model.objects.create_user(username="demo", password="pw"))
    alice = grant_demo_permissions(django_user_model.objects.create_user(username="alice", password="pw"))
    ResearchStream.objects.create(owner=demo, name="CRISPR delivery watch", purpose="Lipid nanoparticle delivery of CRISPR editors")
    mine = ResearchStream.objects.create(owner=alice, name=f"{SECRET} CRISPR delivery", purpose=f"{SECRET} vectors for CRISPR delivery")
    Report.objects.create(stream=mine, title=f"{SECRET} report on CRISPR delivery", summary=f"{SECRET} capsids deliver CRISPR")
    return demo, alice


def _search(source: Source, user: Any, query: str, limit: int = 8) -> list[Any]:
    return source_search(source, user=user, context={}, query=query, limit=limit)


@pytest.mark.django_db
def test_scope_is_applied_inside_the_search_for_two_users(two_users: tuple[Any, Any]) -> None:
    demo, alice = two_users
    assert [h.title for h in _search(STREAMS, demo, "CRISPR delivery")] == ["CRISPR delivery watch"]
    assert [h.title for h in _search(STREAMS, alice, "CRISPR delivery")] == [f"{SECRET} CRISPR delivery"]
    # a query only alice's stream matches: nothing for demo, not even after asking for many results
    assert _search(STREAMS, demo, SECRET, limit=50) == [] and _search(REPORTS, demo, SECRET, limit=50) == []
    assert len(_search(STREAMS, alice, SECRET)) == 1 and len(_search(REPORTS, alice, SECRET)) == 1


@pytest.mark.django_db
def test_scope_inside_the_query_even_when_the_limit_is_one(django_user_model: Any) -> None:
    """Alice's many better matches cannot crowd out demo's one: the scope is a condition of the ranked SELECT, not a
    filter applied after ranking and limiting (which would return nothing here)."""
    demo = django_user_model.objects.create_user(username="demo")
    alice = django_user_model.objects.create_user(username="alice")
    for i in range(30):
        ResearchStream.objects.create(owner=alice, name=f"Zebrafish zebrafish {i}", purpose="zebrafish zebrafish zebrafish")
    ResearchStream.objects.create(owner=demo, name="Fish models", purpose="zebrafish")
    from tools.sources.backends.base import SearchBackend
    from tools.sources.index import backend_for

    backend = backend_for(STREAMS)
    assert isinstance(backend, SearchBackend)
    hits = _search(STREAMS, demo, "zebrafish", limit=1)
    assert [h.title for h in hits] == ["Fish models"]
    # and the backend itself, given 1 candidate only, ranks within the scope
    scope = ResearchStream.objects.owned_by(demo).values_list("pk", flat=True)
    from django.db.models import TextField
    from django.db.models.functions import Cast

    sql, params = ResearchStream.objects.filter(pk__in=scope).annotate(p=Cast("pk", TextField())).values("p").query.sql_with_params()
    ranked = backend.search(connection, "streams", ["zebrafish"], sql, params, candidates=1)
    assert len(ranked) == 1 and ranked[0][0] == str(ResearchStream.objects.get(owner=demo).pk)
    # and with the scope selecting the pk in its own type, as source_search passes it
    sql, params = ResearchStream.objects.owned_by(demo).values("pk").query.sql_with_params()
    pk_type = ResearchStream._meta.pk.cast_db_type(connection)
    ranked = backend.search(connection, "streams", ["zebrafish"], sql, params, candidates=1, pk_type=pk_type)
    assert len(ranked) == 1 and ranked[0][0] == str(ResearchStream.objects.get(owner=demo).pk)


@pytest.mark.django_db
def test_index_follows_save_and_delete_and_rebuild(two_users: tuple[Any, Any]) -> None:
    demo, _ = two_users
    stream = ResearchStream.objects.get(owner=demo)
    stream.name = "Quokka behaviour"
    stream.save()
    assert [h.title for h in _search(STREAMS, demo, "quokka")] == ["Quokka behaviour"]
    stream.delete()
    assert _search(STREAMS, demo, "quokka") == []
    # bulk writes send no signals: the rebuild command indexes them
    ResearchStream.objects.bulk_create([ResearchStream(owner=demo, name="Axolotl regeneration")])
    assert _search(STREAMS, demo, "axolotl") == []
    call_command("chat_sources_rebuild", "streams", stdout=open("/dev/null", "w"))
    assert [h.title for h in _search(STREAMS, demo, "axolotl")] == ["Axolotl regeneration"]


@pytest.mark.django_db
def test_articles_source_measures_as_well_as_the_demo_search() -> None:
    """search_quality through the articles source: the same precision as the demo's own article_search, and the
    queries with no good match get nothing."""
    from django.contrib.auth.models import User

    from pages.demo.search import article_search
    from pages.demo.search_quality import quality_measure

    reader = User(username="reader")
    through_source = quality_measure(lambda query, limit: [h.obj for h in source_search(ARTICLES, user=reader, context={}, query=query, limit=limit)])
    demo_search = quality_measure(article_search)
    assert through_source.precision >= demo_search.precision - 0.02 and through_source.precision >= 0.9
    assert through_source.no_match_correct == through_source.no_match_total


@pytest.mark.django_db
def test_a_scope_that_selects_nothing_searches_nothing() -> None:
    """The articles' scope is `.none()` for someone not signed in: no SQL to compile, nothing found, no error."""
    from django.contrib.auth.models import AnonymousUser

    assert _search(ARTICLES, AnonymousUser(), "CRISPR gene editing") == []


@pytest.mark.django_db
def test_a_source_whose_primary_key_is_a_uuid(two_users: tuple[Any, Any]) -> None:
    """The index keeps a pk as the database stores it (32 hex digits for a UUID on SQLite), so the scope, compared in
    the pk's own type, finds the user's object and never the other user's."""
    from chat.models import Attachment

    demo, alice = two_users
    sources, tools = SourceRegistry(), ToolRegistry()
    files = sources.register(Source(name="t_files", model=Attachment, fields=("name",), title="name", offer_tool=False,
                                    scope=lambda user, context: Attachment.objects.filter(owner=user)), tools=tools, origin="here:1")
    try:
        mine = Attachment.objects.create(owner=demo, name="Quokka census.pdf", content_type="application/pdf", size=1, file="t/a.pdf")
        Attachment.objects.create(owner=alice, name=f"Quokka {SECRET}.pdf", content_type="application/pdf", size=1, file="t/b.pdf")
        hits = _search(files, demo, "quokka")
        assert [(h.title, h.obj.pk) for h in hits] == [("Quokka census.pdf", mine.pk)]
        mine.delete()  # the delete signal finds the entry under the same key
        assert _search(files, demo, "quokka") == [] and [h.title for h in _search(files, alice, "quokka")] == [f"Quokka {SECRET}.pdf"]
    finally:
        sources.unregister("t_files", tools=tools)


def test_check_errors_on_a_source_without_scope_and_on_unknown_fields() -> None:
    sources, tools = SourceRegistry(), ToolRegistry()
    sources.register(Source(name="t_noscope", model=ResearchStream, fields=("name",), scope=None), tools=tools, origin="here:1")
    sources.register(Source(name="t_badfield", model=ResearchStream, fields=("nope",), scope=lambda u, c: ResearchStream.objects.none()),
                     tools=tools, origin="here:2")
    sources.register(Source(name="t_badfield", model=ResearchStream, fields=("name",), scope=lambda u, c: ResearchStream.objects.none()),
                     tools=tools, origin="there:3")
    try:
        ids = sorted(e.id for e in source_problems(sources))
        assert ids == ["tools.E020", "tools.E022", "tools.E023"]
        assert "search_t_noscope" in tools and "search_t_badfield" in tools  # each source is a tool
    finally:
        for name in ("t_noscope", "t_badfield"):
            sources.unregister(name, tools=tools)


def test_the_project_check_passes_and_names_the_demo_sources() -> None:
    from tools.sources.registry import registry

    assert {"articles", "streams", "reports"} <= {s.name for s in registry}
    assert source_problems(registry) == []


def test_marker_filter_never_lets_a_marker_through_split_anywhere() -> None:
    text = "Lipids work [[source:1]] and capsids [[source:12]]; [[sour is not one; [x] stays [[source:]] too."
    expected = markers_shown(text)
    assert "[1]" in expected and "[12]" in expected and "[[source:1]]" not in expected
    for size in range(1, 12):
        f = SourceMarkerFilter()
        out = "".join(f.feed(text[i:i + size]) for i in range(0, len(text), size)) + f.close()
        assert out == expected and "[[source:1" not in out


@pytest.mark.django_db
def test_a_source_tool_cites_and_numbers_across_calls(two_users: tuple[Any, Any]) -> None:
    demo, _ = two_users
    spec = source_tool_spec(STREAMS)
    ctx = ToolContext(user=demo, services={})
    first = spec.executor({"query": "CRISPR delivery"}, ctx)
    again = spec.executor({"query": "lipid nanoparticle"}, ctx)
    assert first.sources[0]["n"] == 1 and again.sources[0]["n"] == 1  # the same stream keeps its number
    assert "[[source:1]] CRISPR delivery watch" in first.text and SECRET not in first.text + again.text


def _frames_text(events: list[dict[str, Any]]) -> str:
    return json.dumps(events, ensure_ascii=False)


@pytest.mark.django_db(transaction=True)
async def test_reports_page_answers_with_article_citations_over_the_websocket(two_users: tuple[Any, Any], corpus: int) -> None:
    demo, _ = two_users
    ws, _ = await ws_connect(demo)
    await ws.chat("What do the articles say about CRISPR delivery?", context={"current_page": "reports"})
    events = await ws.until_terminal()
    done = events[-1]["payload"]
    streamed = "".join(e["text"] for e in events if e["type"] == "text_delta")
    sources = done["sources"]
    assert sources and [s["n"] for s in sources] == list(range(1, len(sources) + 1))
    assert all(s["source"] == "articles" and s["url"].startswith("/articles/") and s["title"] and s["tool_use_id"] for s in sources)
    # the offline model cites what its search found; the markers never go out as written
    assert "[1]" in streamed and "[[source:" not in streamed and "[[source:" not in done["message"]
    assert done["message"] == streamed
    await ws.close()


@pytest.mark.django_db(transaction=True)
async def test_alices_streams_never_reach_demo_on_the_websocket_or_in_diagnostics(two_users: tuple[Any, Any]) -> None:
    demo, alice = two_users
    demo.is_staff = True  # staff get the turn's diagnostics: the model's raw output and tool results
    await demo.asave()
    ws, _ = await ws_connect(demo)
    # words only alice's stream and report contain besides SECRET (the question itself must not carry it)
    for question in ("Search your research streams for vectors", "Search your reports for capsids"):
        await ws.chat(question, context={"current_page": "reports"})
        events = await ws.until_terminal()
        done = events[-1]["payload"]
        assert SECRET not in _frames_text(events), question  # never searched, cited, counted or summarised
        assert done.get("diagnostics") is not None
    runs = [r async for r in Run.objects.filter(conversation__owner=demo)]
    assert runs and all(SECRET not in json.dumps(r.diagnostics) for r in runs)
    await ws.close()
    ws, _ = await ws_connect(alice)
    await ws.chat("Search your research streams for vectors", context={"current_page": "reports"})
    done = (await ws.until_terminal())[-1]["payload"]
    assert [s["title"] for s in done["sources"]] == [f"{SECRET} CRISPR delivery"]  # the same question finds hers for her
    await ws.close()


@pytest.mark.django_db(transaction=True)
def test_rest_turn_carries_sources_and_never_alices(two_users: tuple[Any, Any], client: Any) -> None:
    demo, _ = two_users
    body = {"client_message_id": "s1", "message": "Search your research streams for CRISPR delivery", "context": {"current_page": "reports"}}
    response = client.post("/api/chat", data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Token {token_for(demo)}")
    assert response.status_code == 200, response.content
    payload = response.json()
    assert [s["title"] for s in payload["sources"]] == ["CRISPR delivery watch"] and SECRET not in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_conversation_history_returns_each_answers_sources(two_users: tuple[Any, Any], client: Any) -> None:
    """A reloaded conversation still cites: the REST message representation carries the answer's sources."""
    demo, _ = two_users
    auth = {"HTTP_AUTHORIZATION": f"Token {token_for(demo)}"}
    body = {"client_message_id": "s2", "message": "Search your research streams for CRISPR delivery", "context": {"current_page": "reports"}}
    live = client.post("/api/chat", data=json.dumps(body), content_type="application/json", **auth).json()
    history = client.get(f"/api/conversations/{live['conversation_id']}/", **auth)
    question, answer = history.json()["messages"]
    assert answer["sources"] == live["sources"] and answer["sources"][0]["title"] == "CRISPR delivery watch"
    assert question["sources"] is None and SECRET not in history.content.decode()


@pytest.mark.services
@pytest.mark.django_db
def test_on_postgresql_the_default_backend_is_its_full_text_search(two_users: tuple[Any, Any]) -> None:
    """Run this file with DATABASE_URL=postgres://... : every test above then runs on PostgreSQL's backend."""
    from tools.sources.backends.postgres import PostgresBackend
    from tools.sources.index import backend_for

    if connection.vendor != "postgresql":
        pytest.skip("DATABASE_URL is not PostgreSQL")
    assert isinstance(backend_for(STREAMS), PostgresBackend)
    demo, _ = two_users
    assert [h.title for h in _search(STREAMS, demo, "delivering CRISPR")] == ["CRISPR delivery watch"]  # english stemming
