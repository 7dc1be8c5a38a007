"""Regenerate and edit (chat.send's `replace_last`), feedback and the proposal's outcome on a message, titles."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from chat.models import Conversation, Message, Run
from chat.providers import scripted as s
from chat.turns.titles import title_from_content
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


def _rows(conversation_id: int, *, replaced: bool = False) -> list[tuple[str, str]]:
    """The conversation as the model and the message list see it (`replaced=True`: the answers regenerates replaced)."""
    rows = Message.objects.filter(conversation_id=conversation_id, replaced=replaced).order_by("id")
    return list(rows.values_list("role", "content"))


async def _turn(ws: Any, message: str, **fields: Any) -> list[dict[str, Any]]:
    await ws.chat(message, **fields)
    return await ws.until_terminal()


async def test_regenerate_makes_a_new_run_and_keeps_one_question(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("first answer"))
    scripted.enqueue(s.text("second answer"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    first = (await _turn(ws, "What is a stream?"))[-1]
    conv_id = first["payload"]["conversation_id"]
    events = await _turn(ws, "", conversation_id=conv_id, replace_last="answer")
    assert events[-1]["type"] == "complete" and events[-1]["payload"]["message"] == "second answer"
    assert events[-1]["run_id"] != first["run_id"]
    rows = await database_sync_to_async(_rows)(conv_id)
    assert rows == [("user", "What is a stream?"), ("assistant", "second answer")]
    # the first answer is kept, as the second one's earlier version, and nothing else sees it
    assert await database_sync_to_async(_rows)(conv_id, replaced=True) == [("assistant", "first answer")]
    runs = await database_sync_to_async(lambda: list(Run.objects.filter(conversation_id=conv_id).values_list("user_message__content", flat=True)))()
    assert runs == ["What is a stream?", "What is a stream?"]  # two runs, one question
    # the model was asked the stored question again, not an empty message, and not shown the answer it replaces
    assert "What is a stream?" in str(scripted.requests[-1].messages[-1])
    assert "first answer" not in str(scripted.requests[-1].messages)
    await ws.close()


def test_a_regenerated_answer_lists_the_answers_it_replaced(user: Any, scripted: Any) -> None:
    from tests.conftest import token_for

    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    scripted.enqueue(s.text("one"), s.text("two"), s.text("three **bold**"), s.text("next answer"))
    conv = client.post("/api/chat", {"message": "q1"}, content_type="application/json").json()["conversation_id"]
    for _ in range(2):
        r = client.post("/api/chat", {"message": "", "conversation_id": conv, "replace_last": "answer"}, content_type="application/json")
        assert r.status_code == 200, r.content
    client.post("/api/chat", {"message": "q2", "conversation_id": conv}, content_type="application/json")
    messages = client.get(f"/api/conversations/{conv}/").json()["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [("user", "q1"), ("assistant", "three **bold**"), ("user", "q2"),
                                                            ("assistant", "next answer")]
    versions = messages[1]["earlier_versions"]
    assert [v["content"] for v in versions] == ["one", "two"]  # oldest first
    assert set(versions[0]) == {"id", "content", "message_html", "tool_history", "stop_reason", "created_at"}
    assert versions[0]["message_html"] == "<p>one</p>\n"
    assert messages[0]["earlier_versions"] == [] and messages[3]["earlier_versions"] == []
    # the search and the export see the conversation as the list does; the export keeps the versions, marked
    assert client.get("/api/conversations/", {"q": "two"}).json() == []
    export = client.get(f"/api/conversations/{conv}/export/").json()["messages"]
    assert [(m["content"], m["replaced"]) for m in export] == [
        ("q1", False), ("one", True), ("two", True), ("three **bold**", False), ("q2", False), ("next answer", False)]
    # someone else gets nothing of it
    other = Client(headers={"Authorization": f"Token {token_for(user.__class__.objects.create_user(username='eve', password='pw'))}"})
    assert other.get(f"/api/conversations/{conv}/").status_code == 404


def test_a_regenerate_that_failed_before_saying_anything_is_no_version(user: Any, scripted: Any) -> None:
    from chat.providers.base import ProviderError
    from tests.conftest import token_for

    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    scripted.enqueue(s.text("one"), [ProviderError("overloaded", "The model is overloaded.")], s.text("two"))
    conv = client.post("/api/chat", {"message": "q1"}, content_type="application/json").json()["conversation_id"]
    regenerate = {"message": "", "conversation_id": conv, "replace_last": "answer"}
    failed = client.post("/api/chat", regenerate, content_type="application/json")
    assert failed.status_code == 502 and failed.json()["code"] == "overloaded"
    (answer,) = [m for m in client.get(f"/api/conversations/{conv}/").json()["messages"] if m["role"] == "assistant"]
    assert answer["status"] == "error" and answer["content"] == ""  # the failed answer, with the one it replaced to page back to
    assert [v["content"] for v in answer["earlier_versions"]] == ["one"]
    assert client.post("/api/chat", regenerate, content_type="application/json").status_code == 200
    (answer,) = [m for m in client.get(f"/api/conversations/{conv}/").json()["messages"] if m["role"] == "assistant"]
    assert answer["content"] == "two" and [v["content"] for v in answer["earlier_versions"]] == ["one"]  # not the empty one
    export = client.get(f"/api/conversations/{conv}/export/").json()["messages"]
    assert [(m["content"], m["replaced"]) for m in export] == [("q1", False), ("one", True), ("", True), ("two", False)]  # all kept


def test_retry_of_a_failed_first_answer_is_a_regenerate_and_stores_the_question_once(user: Any, scripted: Any) -> None:
    """What the tray's Retry sends after a run error: the question is stored, so it asks for its answer again."""
    from chat.providers.base import ProviderError
    from tests.conftest import token_for

    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    scripted.enqueue([ProviderError("overloaded", "The model is overloaded.")], s.text("ok"))
    failed = client.post("/api/chat", {"message": "q1", "client_message_id": "c1"}, content_type="application/json").json()
    conv = Conversation.objects.get(owner=user).pk
    assert failed["code"] == "overloaded"
    retry = client.post("/api/chat", {"message": "", "conversation_id": conv, "replace_last": "answer", "client_message_id": "c2"},
                        content_type="application/json")
    assert retry.status_code == 200 and retry.json()["message"] == "ok"
    messages = client.get(f"/api/conversations/{conv}/").json()["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [("user", "q1"), ("assistant", "ok")]
    assert messages[1]["earlier_versions"] == []


async def test_a_resent_regenerate_starts_nothing_new(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("one"))
    scripted.enqueue(s.text("two"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    conv_id = (await _turn(ws, "hello"))[-1]["payload"]["conversation_id"]
    again = await _turn(ws, "", conversation_id=conv_id, replace_last="answer", client_message_id="regen-1")
    resent = await _turn(ws, "", conversation_id=conv_id, replace_last="answer", client_message_id="regen-1")
    assert resent[-1]["run_id"] == again[-1]["run_id"]
    assert await database_sync_to_async(lambda: Run.objects.filter(conversation_id=conv_id).count())() == 2
    await ws.close()


async def test_edit_replaces_the_last_question_and_its_answer(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("a1"), s.text("a2"), s.text("a2 again"), s.text("a3"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    conv_id = (await _turn(ws, "q1"))[-1]["payload"]["conversation_id"]
    await _turn(ws, "q2 with a typo", conversation_id=conv_id)
    await _turn(ws, "", conversation_id=conv_id, replace_last="answer")  # a2 becomes an earlier version of "a2 again"
    events = await _turn(ws, "q2 fixed", conversation_id=conv_id, replace_last="question")
    assert events[-1]["payload"]["message"] == "a3"
    assert await database_sync_to_async(_rows)(conv_id) == [("user", "q1"), ("assistant", "a1"), ("user", "q2 fixed"), ("assistant", "a3")]
    # the edited question goes with all its answers, earlier versions included
    assert await database_sync_to_async(_rows)(conv_id, replaced=True) == []
    await ws.close()


@pytest.mark.parametrize("fields, code", [
    ({"replace_last": "answer"}, "bad_frame"),  # no conversation
    ({"replace_last": "again"}, "bad_frame"),
])
async def test_replace_last_refusals(user: Any, scripted: Any, fields: dict[str, Any], code: str) -> None:
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("x", **fields)
    error = await ws.recv()
    assert error["type"] == "error" and error["code"] == code
    await ws.close()


async def test_replace_last_in_someone_elses_conversation_is_not_found(user: Any, other_user: Any, scripted: Any) -> None:
    conv = await Conversation.objects.acreate(owner=other_user, title="theirs")
    await Message.objects.acreate(conversation=conv, role="user", content="secret question")
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("", conversation_id=conv.pk, replace_last="answer")
    error = await ws.recv()
    assert error["code"] == "not_found"
    assert await Message.objects.filter(conversation=conv).acount() == 1
    await ws.close()


def _answer(owner: Any) -> Message:
    conv = Conversation.objects.create(owner=owner, title="t")
    Message.objects.create(conversation=conv, role="user", content="q")
    return Message.objects.create(conversation=conv, role="assistant", content="a", custom_payload={"payload_id": "p1"})


def test_feedback_and_outcome_are_stored_and_read_back(user: Any, other_user: Any) -> None:
    msg = _answer(user)
    client = Client()
    client.force_login(user)
    url = f"/api/messages/{msg.pk}/"
    r = client.patch(url, {"feedback": "bad", "feedback_comment": "wrong stream"}, content_type="application/json")
    assert r.status_code == 200 and r.json()["feedback"] == "bad"
    r = client.patch(url, {"payload_outcome": "accepted"}, content_type="application/json")
    assert r.status_code == 200
    msg.refresh_from_db()
    assert (msg.feedback, msg.feedback_comment, msg.payload_outcome) == ("bad", "wrong stream", "accepted")
    detail = client.get(f"/api/conversations/{msg.conversation_id}/").json()
    stored = detail["messages"][-1]
    assert (stored["feedback"], stored["feedback_comment"], stored["payload_outcome"]) == ("bad", "wrong stream", "accepted")
    assert client.patch(url, {"feedback": "meh"}, content_type="application/json").status_code == 400
    assert client.patch(url, {"feedback": ""}, content_type="application/json").json()["feedback"] == ""
    other = Client()
    other.force_login(other_user)
    assert other.patch(url, {"feedback": "good"}, content_type="application/json").status_code == 404
    question = Message.objects.get(conversation=msg.conversation, role="user")
    assert client.patch(f"/api/messages/{question.pk}/", {"feedback": "good"}, content_type="application/json").status_code == 404


def test_admin_filters_messages_by_feedback(admin_client: Any, user: Any) -> None:
    msg = _answer(user)
    Message.objects.filter(pk=msg.pk).update(feedback="bad")
    other = _answer(user)
    page = admin_client.get("/admin/pagechat/message/?feedback__exact=bad")
    assert page.status_code == 200
    body = page.content.decode()
    assert f"/admin/pagechat/message/{msg.pk}/change/" in body and f"/admin/pagechat/message/{other.pk}/change/" not in body


async def test_title_is_generated_after_the_first_turn(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("Streams collect articles."))
    ws, _ = await ws_connect(user)
    assert ws is not None
    conv_id = (await _turn(ws, "could you please tell me what the oncology stream is about?"))[-1]["payload"]["conversation_id"]
    await ws.close()
    for _ in range(50):  # the title is written just after the answer is delivered
        conv = await Conversation.objects.aget(pk=conv_id)
        if conv.title == "Oncology stream":
            break
        await asyncio.sleep(0.05)
    assert conv.title == "Oncology stream"


def test_title_from_content_skips_filler_words() -> None:
    assert title_from_content("What is this stream about?", "") == "Stream"
    assert title_from_content("tab am AND clinical trial", "") == "Tab clinical trial"
    # an expression stays whole; emphasis marks go
    assert title_from_content("What is 17*23+4? and what time is it", "") == "17*23+4 time"
    assert title_from_content("**Compare** 3.5/7 with *10-2*", "") == "Compare 3.5/7 10-2"
    # a question of common words only is its own title, not words picked out of the answer's greeting
    assert title_from_content("What can you do here?", "Hello! I'm the offline model on the **home** page") == "What can you do here?"
    assert title_from_content("hi", "## Welcome to pagechat\nmore") == "Hi"
    # files alone: the answer's first line, its topic words (contractions are common words too)
    assert title_from_content("", "## I\u2019m reading the attached report\nmore") == "Reading attached report"
    assert title_from_content("", "") == "New conversation"
    # another language's common words are not known here: the question is its own title (clipped), not "Kannst du hier"
    assert title_from_content("Was kannst du hier?", "", language="de") == "Was kannst du hier?"
    assert title_from_content("Tell me about CRISPR gene editing", "", language="en-GB") == "CRISPR gene editing"
    assert len(title_from_content("Erzähl mir " + "sehr " * 40 + "viel", "", language="de")) <= 60
    assert len(title_from_content("word " * 100)) <= 60


def test_a_renamed_conversation_keeps_its_name(user: Any) -> None:
    from chat.turns.titles import conversation_title_set

    conv = Conversation.objects.create(owner=user, title="my own name")
    assert not conversation_title_set(conversation_id=conv.pk, provisional="first words", title="Generated")
    client = Client()
    client.force_login(user)
    r = client.patch(f"/api/conversations/{conv.pk}/", {"title": "Renamed"}, content_type="application/json")
    assert r.status_code == 200
    conv.refresh_from_db()
    assert conv.title == "Renamed"
