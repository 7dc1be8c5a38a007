"""SSE and REST transports over the real ASGI/Django stack."""
from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient, Client

from chat.models import Conversation, Message
from chat.providers import scripted as s
from tests.conftest import token_for
from tests.protocol import check_http, check_wire

pytestmark = pytest.mark.django_db(transaction=True)


def parse_sse(chunks: list[bytes]) -> list[tuple[str | None, dict[str, Any]]]:
    out = []
    for block in b"".join(chunks).decode().split("\n\n"):
        if not block.strip():
            continue
        ident = None
        data = None
        for line in block.splitlines():
            if line.startswith("id: "):
                ident = line[4:]
            elif line.startswith("data: "):
                data = check_wire(line[6:])
        out.append((ident, data))
    return out


async def auth_headers(user: Any) -> dict[str, str]:
    return {"Authorization": f"Token {await database_sync_to_async(token_for)(user)}"}


class TokenClient(AsyncClient):
    """An AsyncClient that sends the token on every request (the constructor's headers are not applied to ASGI scopes)."""

    def __init__(self, headers: dict[str, str]):
        super().__init__()
        self.auth = headers

    def generic(self, *args: Any, headers: dict[str, str] | None = None, **kw: Any) -> Any:
        return super().generic(*args, headers={**self.auth, **(headers or {})}, **kw)


async def test_sse_streams_incrementally(user: Any, scripted: Any) -> None:
    scripted.enqueue([s.TextDelta("one "), 0.3, s.TextDelta("two")])
    client = TokenClient(await auth_headers(user))
    response = await client.post("/api/chat/stream", {"client_message_id": "c1", "message": "hi"}, content_type="application/json")
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    arrivals: list[tuple[float, bytes]] = []
    t0 = time.perf_counter()
    async for chunk in response.streaming_content:
        arrivals.append((time.perf_counter() - t0, chunk))
    events = parse_sse([c for _, c in arrivals])
    types = [e["type"] for _, e in events]
    assert types[0] == "status" and types[-1] == "complete"
    ids = [i for i, _ in events]
    run_id = events[0][1]["run_id"]
    assert ids == [f"{run_id}:{n}" for n in range(1, len(ids) + 1)]
    # the first text arrived well before the last: streamed, not buffered
    first_text = next(t for t, c in arrivals if b"one " in c)
    last = arrivals[-1][0]
    assert last - first_text >= 0.25


async def test_sse_resume_with_last_event_id_and_cancel(user: Any, scripted: Any) -> None:
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("a"), 0.05, s.TextDelta("b"), gate])
    headers = await auth_headers(user)
    client = TokenClient(headers)
    response = await client.post("/api/chat/stream", {"client_message_id": "c2", "message": "hi"}, content_type="application/json")
    it = response.streaming_content.__aiter__()
    first = parse_sse([await it.__anext__()])[0][1]
    run_id = first["run_id"]
    await asyncio.sleep(0.3)
    cancel = await client.post(f"/api/chat/runs/{run_id}/cancel")
    assert cancel.status_code == 202
    resumed = await client.get(f"/api/chat/runs/{run_id}/events", headers={**headers, "Last-Event-ID": f"{run_id}:1"})
    events = parse_sse([c async for c in resumed.streaming_content])
    assert [e["seq"] for _, e in events] == list(range(2, 2 + len(events)))
    assert events[-1][1]["type"] == "cancelled"
    assert "".join(e.get("text", "") for _, e in events) == "ab"


async def test_sse_resume_after_the_terminal_event_is_204(user: Any, other_user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("done"))
    headers = await auth_headers(user)
    client = TokenClient(headers)
    response = await client.post("/api/chat/stream", {"client_message_id": "e1", "message": "hi"}, content_type="application/json")
    events = parse_sse([c async for c in response.streaming_content])
    run_id, last = events[-1][1]["run_id"], events[-1][1]["seq"]
    assert events[-1][1]["type"] == "complete"
    url = f"/api/chat/runs/{run_id}/events"
    for seq in (last, last + 5):  # at or past the terminal event: nothing will ever come, so no stream at all
        r = await client.get(url, headers={"Last-Event-ID": f"{run_id}:{seq}"})
        assert r.status_code == 204 and r.content == b""
    r = await client.get(url, headers={"Last-Event-ID": f"{run_id}:{last - 1}"})  # one before: the terminal event again
    assert r.status_code == 200 and [e for _, e in parse_sse([c async for c in r.streaming_content])] == [events[-1][1]]
    r = await client.get(f"{url}?last_event_id={run_id}:{last}")
    assert r.status_code == 204
    for bad in ("7", f"{run_id}:", f"{run_id}:x", f"{run_id}:-1", "00000000-0000-0000-0000-000000000000:3", f"{run_id}:{'9' * 30}"):
        r = await client.get(url, headers={"Last-Event-ID": bad})
        assert r.status_code == 400, bad
        check_http(400, r.content)
        assert r.json()["code"] == "bad_frame"
    other = TokenClient(await auth_headers(other_user))  # someone else's run: the same 404 as a missing one
    r = await other.get(url, headers={"Last-Event-ID": f"{run_id}:{last}"})
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_sse_refusals(user: Any, other_user: Any, scripted: Any) -> None:
    anon = AsyncClient()
    r = await anon.post("/api/chat/stream", {"client_message_id": "x", "message": "hi"}, content_type="application/json")
    assert r.status_code == 401
    client = TokenClient(await auth_headers(user))
    r = await client.post("/api/chat/stream", "not json", content_type="application/json")
    assert r.status_code == 400 and r.json()["code"] == "bad_json"
    conv = await Conversation.objects.acreate(owner=other_user, title="bob's")
    r = await client.post("/api/chat/stream", {"client_message_id": "x", "message": "hi", "conversation_id": conv.pk}, content_type="application/json")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await client.get("/api/chat/runs/not-a-uuid/events")
    assert r.status_code == 404


async def test_session_sse_requires_csrf(user: Any, scripted: Any) -> None:
    client = AsyncClient(enforce_csrf_checks=True)
    await database_sync_to_async(client.force_login)(user)
    r = await client.post("/api/chat/stream", {"client_message_id": "x", "message": "hi"}, content_type="application/json")
    assert r.status_code == 401 and "CSRF" in r.json()["message"]


def test_rest_chat_returns_the_final_response(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("Hi! ", 'SUGGESTED_VALUES: [{"label": "Yes", "value": "yes please"}]'))
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    r = client.post("/api/chat", {"client_message_id": "r1", "message": "hello", "context": {"current_page": "home"}}, content_type="application/json")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["message"] == "Hi! " and body["suggested_values"] == [{"label": "Yes", "value": "yes please"}]
    assert set(body) >= {"message", "message_html", "suggested_values", "suggested_actions", "custom_payload", "tool_history",
                         "conversation_id", "message_id", "run_id", "usage"}
    assert "diagnostics" not in body
    assert Message.objects.get(pk=body["message_id"]).content == "Hi! "


def test_reloaded_history_carries_diagnostics_for_staff_only(user: Any, scripted: Any, django_user_model: Any) -> None:
    staff = django_user_model.objects.create_user(username="sam", password="pw", is_staff=True)
    for who, expect_diagnostics in ((user, False), (staff, True)):
        scripted.enqueue(s.text("answer"))
        client = Client(headers={"Authorization": f"Token {token_for(who)}"})
        cid = client.post("/api/chat", {"client_message_id": f"d-{who.pk}", "message": "hi"}, content_type="application/json").json()["conversation_id"]
        user_msg, answer = client.get(f"/api/conversations/{cid}/").json()["messages"]
        assert user_msg["diagnostics"] is None
        if expect_diagnostics:
            assert {"model", "usage", "system_prompt"} <= set(answer["diagnostics"]), answer["diagnostics"]
        else:
            assert answer["diagnostics"] is None


def test_rest_conversations_crud_is_owner_scoped(user: Any, other_user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("stored answer"))
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    body = client.post("/api/chat", {"client_message_id": "r2", "message": "remember me"}, content_type="application/json").json()
    cid = body["conversation_id"]
    listing = client.get("/api/conversations/").json()
    assert [c["id"] for c in listing] == [cid]
    detail = client.get(f"/api/conversations/{cid}/").json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    assert detail["messages"][1]["content"] == "stored answer" and "<p>" in detail["messages"][1]["message_html"]
    assert client.patch(f"/api/conversations/{cid}/", {"title": "Renamed"}, content_type="application/json").json()["title"] == "Renamed"
    bob = Client(headers={"Authorization": f"Token {token_for(other_user)}"})
    assert bob.get(f"/api/conversations/{cid}/").status_code == 404
    assert bob.patch(f"/api/conversations/{cid}/", {"title": "x"}, content_type="application/json").status_code == 404
    assert bob.delete(f"/api/conversations/{cid}/").status_code == 404
    assert bob.get("/api/conversations/").json() == []
    assert client.post("/api/conversations/", {"title": "new one"}, content_type="application/json").status_code == 201
    assert client.delete(f"/api/conversations/{cid}/").status_code == 204
    assert not Conversation.objects.filter(pk=cid).exists()
    assert Client().get("/api/conversations/").status_code in (401, 403)


def test_rest_conversations_are_found_by_title_or_message_and_listed_a_part_at_a_time(user: Any, other_user: Any) -> None:
    ids = {}
    for title, said in [("Gene editing notes", "What is CRISPR?"), ("Budget", "the 50% discount on reagents"), ("Untitled", "nothing here")]:
        conv = Conversation.objects.create(owner=user, title=title)
        Message.objects.create(conversation=conv, role="user", content=said)
        Message.objects.create(conversation=conv, role="assistant", content=f"An answer about {title.lower()}.")
        ids[title] = conv.pk
    theirs = Conversation.objects.create(owner=other_user, title="Gene editing, theirs")
    Message.objects.create(conversation=theirs, role="user", content="crispr too")
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})

    def found(query: str) -> list[int]:
        response = client.get(f"/api/conversations/?{query}")
        assert response.status_code == 200, response.content
        return [c["id"] for c in response.json()]

    newest_first = [ids["Untitled"], ids["Budget"], ids["Gene editing notes"]]
    assert found("") == newest_first
    assert found("q=gene") == [ids["Gene editing notes"]]  # the title, case-insensitively; never another user's
    assert found("q=crispr") == [ids["Gene editing notes"]]  # the user's own words
    assert found("q=answer about budget") == [ids["Budget"]]  # the assistant's words
    assert found("q=50%25") == [ids["Budget"]] and found("q=_") == []  # LIKE wildcards are text
    assert found("q=%20%20") == newest_first  # blank: everything
    assert found("limit=2") == newest_first[:2] and found("limit=2&offset=2") == newest_first[2:]
    assert found("offset=1") == newest_first[1:] and found("limit=2&offset=9") == []
    for bad in ("limit=0", "limit=201", "offset=-1", "limit=x", "q=" + "x" * 201, "offset=" + "9" * 39):  # the last was a 500
        response = client.get(f"/api/conversations/?{bad}")
        assert response.status_code == 400 and set(response.json()) <= {"limit", "offset", "q"}, (bad, response.content)


def test_rest_conversation_is_read_a_part_at_a_time_with_its_versions(user: Any, other_user: Any) -> None:
    """`limit` reads the latest messages, `before` the ones older than a message; `has_earlier` says whether more
    exist; an answer's earlier versions come with it even when its question is in the part before."""
    conv = Conversation.objects.create(owner=user, title="long")
    shown: list[int] = []
    for i in range(5):
        shown.append(Message.objects.create(conversation=conv, role="user", content=f"q{i}").pk)
        if i == 3:  # a regenerated answer: the replaced one lies between the question and the answer shown
            Message.objects.create(conversation=conv, role="assistant", content="a3 first", replaced=True, status="complete")
        shown.append(Message.objects.create(conversation=conv, role="assistant", content=f"a{i}", status="complete").pk)
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})

    def read(query: str = "") -> dict[str, Any]:
        response = client.get(f"/api/conversations/{conv.pk}/?{query}")
        assert response.status_code == 200, response.content
        return response.json()

    whole = read()
    assert [m["id"] for m in whole["messages"]] == shown and whole["has_earlier"] is False
    latest = read("limit=3")  # a3 (with its earlier version; its question q3 is older), q4, a4
    assert [m["id"] for m in latest["messages"]] == shown[-3:] and latest["has_earlier"] is True
    assert [v["content"] for v in latest["messages"][0]["earlier_versions"]] == ["a3 first"]
    older = read(f"limit=3&before={shown[-3]}")
    assert [m["id"] for m in older["messages"]] == shown[-6:-3] and older["has_earlier"] is True
    oldest = read(f"limit=3&before={shown[-6]}")
    assert [m["id"] for m in oldest["messages"]] == shown[1:4] and oldest["has_earlier"] is True
    assert read(f"limit=500&before={shown[1]}") == {**whole, "messages": whole["messages"][:1], "has_earlier": False}
    assert read(f"before={shown[1]}")["messages"] == whole["messages"][:1]
    assert read(f"limit=10&before={shown[0]}")["messages"] == [] and read("limit=500") == whole
    for bad in ("limit=0", "limit=501", "limit=x", "before=0", "before=x", "before=" + "9" * 39):
        response = client.get(f"/api/conversations/{conv.pk}/?{bad}")
        assert response.status_code == 400 and set(response.json()) <= {"limit", "before"}, (bad, response.content)
    other = Client(headers={"Authorization": f"Token {token_for(other_user)}"})
    assert other.get(f"/api/conversations/{conv.pk}/?limit=3").status_code == 404


def test_rest_preferences_are_the_users_own(user: Any, other_user: Any) -> None:
    """GET/PUT <api>preferences/: empty until set, trimmed, bounded, cleared by ""; each user has their own."""
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    assert client.get("/api/preferences/").json() == {"instructions": "", "updated_at": None}
    saved = client.put("/api/preferences/", {"instructions": "  Answer briefly; I review oncology trials.\n"}, content_type="application/json")
    assert saved.status_code == 200, saved.content
    assert saved.json()["instructions"] == "Answer briefly; I review oncology trials." and saved.json()["updated_at"]
    assert client.get("/api/preferences/").json()["instructions"] == "Answer briefly; I review oncology trials."
    other = Client(headers={"Authorization": f"Token {token_for(other_user)}"})
    assert other.get("/api/preferences/").json()["instructions"] == ""
    for bad in ({"instructions": "x" * 1501}, {"instructions": None}, {"instructions": ["a"]}, {}):
        response = client.put("/api/preferences/", bad, content_type="application/json")
        assert response.status_code == 400 and set(response.json()) == {"instructions"}, (bad, response.content)
    assert client.put("/api/preferences/", "{", content_type="application/json").status_code == 400
    assert client.get("/api/preferences/").json()["instructions"] == "Answer briefly; I review oncology trials."  # nothing lost
    assert client.put("/api/preferences/", {"instructions": ""}, content_type="application/json").json()["instructions"] == ""
    assert Client().get("/api/preferences/").status_code == 401
    assert Client().put("/api/preferences/", {"instructions": "x"}, content_type="application/json").status_code == 401
    assert client.get("/api/").json()["preferences"] == "/api/preferences/"


def test_rest_conversation_search_says_where_a_message_matched(user: Any) -> None:
    conv = Conversation.objects.create(owner=user, title="Reagents")
    Message.objects.create(conversation=conv, role="user", content="Which supplier?")
    long_answer = "word " * 60 + "the **CRISPR** screen [[tool:0]] found\n\nthree hits " + "more " * 60
    Message.objects.create(conversation=conv, role="assistant", content=long_answer)
    Message.objects.create(conversation=conv, role="user", content="and CRISPR again, later")
    Message.objects.create(conversation=conv, role="assistant", content="crispr, replaced", replaced=True)
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})

    def snippet(query: str) -> str:
        (item,) = client.get("/api/conversations/", {"q": query}).json()
        return str(item["snippet"])

    found = snippet("crispr")  # the first message that says it, case-insensitively, around what matched
    assert found.startswith("…word ") and found.endswith("…") and "the CRISPR screen found three hits" in found
    assert len(found) <= 200 + 2 and "[[" not in found and "*" not in found  # bounded, without markup
    assert snippet("supplier") == "Which supplier?"  # a whole short message: no "…"
    assert snippet("reagents") == ""  # the title matched, no message says it
    assert client.get("/api/conversations/").json()[0]["snippet"] == ""  # no search, no snippet


def test_rest_conversations_pin_to_the_top_and_unpin_back_to_their_place(user: Any, other_user: Any) -> None:
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    ids = [Conversation.objects.create(owner=user, title=f"c{i}").pk for i in range(4)]  # c3 is the newest

    def listed(query: str = "") -> list[int]:
        response = client.get(f"/api/conversations/?{query}")
        assert response.status_code == 200, response.content
        return [c["id"] for c in response.json()]

    def pin(cid: int, pinned: Any, who: Any = client) -> Any:
        return who.patch(f"/api/conversations/{cid}/", {"pinned": pinned}, content_type="application/json")

    assert listed() == ids[::-1] and all(c["pinned"] is False for c in client.get("/api/conversations/").json())
    before = Conversation.objects.get(pk=ids[0]).updated_at
    body = pin(ids[0], True).json()
    assert body["pinned"] is True and body["title"] == "c0"  # the title is left as it was
    assert Conversation.objects.get(pk=ids[0]).updated_at == before  # a pin is not activity
    pin(ids[1], True)
    assert listed() == [ids[1], ids[0], ids[3], ids[2]]  # pinned first, the latest pinned first
    assert listed("limit=2&offset=1") == [ids[0], ids[3]] and listed("q=c1") == [ids[1]]
    assert pin(ids[1], True).json()["pinned"] is True and listed()[0] == ids[1]  # pinning again changes nothing
    assert pin(ids[1], False).json()["pinned"] is False
    assert listed() == [ids[0], ids[3], ids[2], ids[1]]  # back in its place by activity
    renamed = client.patch(f"/api/conversations/{ids[0]}/", {"title": "kept pinned"}, content_type="application/json").json()
    assert renamed["pinned"] is True and renamed["title"] == "kept pinned"
    created = client.post("/api/conversations/", {"title": "pinned at once", "pinned": True}, content_type="application/json")
    assert created.status_code == 201 and created.json()["pinned"] is True and listed()[0] == created.json()["id"]
    assert client.get(f"/api/conversations/{ids[0]}/export/").json()["pinned"] is True
    for bad in ("yes please", None, [True]):
        response = pin(ids[2], bad)
        assert response.status_code == 400 and "pinned" in response.json(), (bad, response.content)
    bob = Client(headers={"Authorization": f"Token {token_for(other_user)}"})
    assert pin(ids[2], True, bob).status_code == 404  # someone else's conversation is not found
    assert not Conversation.objects.get(pk=ids[2]).pinned


async def test_sse_a_log_lost_mid_stream_is_a_resync_not_a_jump_to_the_stored_answer(user: Any, scripted: Any, monkeypatch: Any) -> None:
    from chat.runs import manager
    from tests.chat.test_consumer import _follow_losing_the_log_after

    scripted.enqueue(s.text("one ", "two ", "three"))
    headers = await auth_headers(user)
    client = TokenClient(headers)
    response = await client.post("/api/chat/stream", {"client_message_id": "lost1", "message": "hi"}, content_type="application/json")
    events = parse_sse([c async for c in response.streaming_content])
    run_id = events[0][1]["run_id"]
    monkeypatch.setattr(manager, "follow", _follow_losing_the_log_after(2))
    resumed = await client.get(f"/api/chat/runs/{run_id}/events", headers=headers)
    got = [e for _, e in parse_sse([c async for c in resumed.streaming_content])]
    assert [e.get("seq") for e in got[:2]] == [1, 2]
    assert got[2]["type"] == "error" and got[2]["code"] == "resync" and len(got) == 3
