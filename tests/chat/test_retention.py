"""Export (JSON, Markdown), delete all, the admin's per-user export/erasure, and `chat_purge`."""
from __future__ import annotations

import io
import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from chat.models import Conversation, Message, Run, ToolCall
from tests.conftest import token_for

pytestmark = pytest.mark.django_db


def make_conversation(owner: Any, title: str = "Lung cancer", *, age_days: float = 0) -> Conversation:
    """A conversation with a question, an answer (tool history, a card), a run with a tool call; last active `age_days` ago."""
    conv = Conversation.objects.create(owner=owner, title=title)
    Message.objects.create(conversation=conv, role="user", content="Find EGFR papers")
    answer = Message.objects.create(
        conversation=conv, role="assistant", content="Here are **3** papers.",
        tool_history=[{"name": "search_articles", "input": {"query": "EGFR"}, "output": "3 found"}],
        custom_payload={"payload_id": "p1", "type": "search_results", "data": {"n": 3}, "summary": "3 articles"},
    )
    run = Run.objects.create(conversation=conv, assistant_message=answer, status="completed")
    ToolCall.objects.create(run=run, index=0, tool_use_id="t1", name="search_articles")
    Conversation.objects.filter(pk=conv.pk).update(updated_at=timezone.now() - timedelta(days=age_days))
    conv.refresh_from_db()
    return conv


def api(user: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {token_for(user)}")


def test_export_json_has_the_documented_shape(user: Any) -> None:
    conv = make_conversation(user)
    r = api(user).get(f"/api/conversations/{conv.pk}/export/?format=json")
    assert r.status_code == 200 and r["Content-Type"].startswith("application/json")
    assert r["Content-Disposition"] == f'attachment; filename="conversation-{conv.pk}.json"'
    data = json.loads(r.content)
    assert set(data) == {"id", "title", "created_at", "pinned", "messages"} and data["id"] == conv.pk and data["title"] == "Lung cancer"
    assert data["pinned"] is False
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    for m in data["messages"]:
        assert set(m) == {"role", "content", "created_at", "tool_history", "payload", "feedback", "attachments", "replaced"}
    assert data["messages"][1]["payload"]["type"] == "search_results" and data["messages"][1]["tool_history"][0]["name"] == "search_articles"
    # no format given: JSON too
    assert json.loads(api(user).get(f"/api/conversations/{conv.pk}/export/").content)["id"] == conv.pk


def test_export_markdown_is_a_readable_transcript_download(user: Any) -> None:
    conv = make_conversation(user)
    r = api(user).get(f"/api/conversations/{conv.pk}/export/?format=markdown")  # DRF would read ?format= as a renderer
    assert r.status_code == 200 and r["Content-Type"].startswith("text/markdown")
    assert r["Content-Disposition"] == f'attachment; filename="conversation-{conv.pk}.md"'
    text = r.content.decode()
    assert text.startswith("# Lung cancer\n")
    assert text.index("## You") < text.index("Find EGFR papers") < text.index("## Assistant") < text.index("Here are **3** papers.")
    assert "search_articles" in text and "3 articles" in text
    assert api(user).get(f"/api/conversations/{conv.pk}/export/?format=pdf").status_code == 400


def test_export_of_someone_elses_conversation_is_the_404_of_a_missing_one(user: Any, other_user: Any) -> None:
    conv = make_conversation(user)
    theirs = api(other_user).get(f"/api/conversations/{conv.pk}/export/?format=markdown")
    missing = api(other_user).get("/api/conversations/999999/export/?format=markdown")
    assert theirs.status_code == missing.status_code == 404 and theirs.content == missing.content
    assert Client().get(f"/api/conversations/{conv.pk}/export/").status_code in (401, 403)


def test_delete_all_removes_only_the_users_conversations(user: Any, other_user: Any) -> None:
    mine = [make_conversation(user) for _ in range(3)]
    theirs = make_conversation(other_user)
    r = api(user).post("/api/conversations/delete-all/")
    assert r.status_code == 200 and r.json() == {"deleted": 3}
    assert not Conversation.objects.filter(pk__in=[c.pk for c in mine]).exists()
    assert not Run.objects.filter(conversation__owner=user).exists() and not ToolCall.objects.filter(run__conversation__owner=user).exists()
    assert Conversation.objects.filter(pk=theirs.pk).exists() and Message.objects.filter(conversation=theirs).count() == 2


def purge(*args: str) -> str:
    out = io.StringIO()
    call_command("chat_purge", *args, stdout=out)
    return out.getvalue()


def test_chat_purge_dry_run_then_run_then_nothing_left(user: Any, other_user: Any, settings: Any) -> None:
    old = [make_conversation(user, "old", age_days=40), make_conversation(other_user, "old too", age_days=31)]
    recent = [make_conversation(user, "recent", age_days=29.9), make_conversation(user, "today")]
    Conversation.objects.filter(pk=old[1].pk).update(updated_at=timezone.now() - timedelta(days=30, seconds=5))
    counts = (Conversation.objects.count(), Message.objects.count(), Run.objects.count(), ToolCall.objects.count())

    dry = purge("--days", "30", "--dry-run")
    assert "Would remove 2 conversation(s)" in dry and "4 pagechat.Message" in dry and "2 pagechat.ToolCall" in dry
    assert (Conversation.objects.count(), Message.objects.count(), Run.objects.count(), ToolCall.objects.count()) == counts

    out = purge("--days", "30", "--batch-size", "1")
    assert out.count("  Removed 1 conversation(s)") == 2 and "Removed 2 conversation(s)" in out
    assert set(Conversation.objects.values_list("title", flat=True)) == {"recent", "today"}
    assert Message.objects.count() == 4 and Run.objects.count() == 2 and ToolCall.objects.count() == 2
    assert "Removed 0 conversation(s)" in purge("--days", "30")  # a second run is safe and removes nothing
    assert {c.pk for c in recent} == set(Conversation.objects.values_list("pk", flat=True))


def test_chat_purge_days_zero_and_the_setting(user: Any, settings: Any) -> None:
    make_conversation(user, age_days=0.001)
    assert "nothing to do" in purge()  # CHAT_RETENTION_DAYS unset: keep forever
    settings.CHAT_RETENTION_DAYS = 1
    assert "Removed 0 conversation(s)" in purge()
    assert "Removed 1 conversation(s)" in purge("--days", "0")
    assert Conversation.objects.count() == 0


@pytest.mark.django_db(transaction=True)
async def test_export_all_streams_every_conversation_of_the_user_and_no_one_elses(user: Any, other_user: Any) -> None:
    from asgiref.sync import sync_to_async
    from django.test import AsyncClient

    from chat import services

    mine = [await sync_to_async(make_conversation)(user) for _ in range(2)]
    theirs = await sync_to_async(make_conversation)(other_user)
    await sync_to_async(services.preferences_update)(user=user, instructions="Call me Dr. Ann.")
    await sync_to_async(services.preferences_update)(user=other_user, instructions="theirs")
    token = await sync_to_async(token_for)(user)
    response = await AsyncClient().get("/api/conversations/export/", headers={"Authorization": f"Token {token}"})
    assert response.status_code == 200 and response["Content-Type"] == "application/json" and response.streaming
    assert response["Content-Disposition"] == 'attachment; filename="conversations.json"'
    chunks = [c async for c in response.streaming_content]
    assert len(chunks) == 2 + len(mine)  # written a conversation at a time
    data = json.loads(b"".join(c if isinstance(c, bytes) else c.encode() for c in chunks))
    assert set(data) == {"exported_at", "username", "preferences", "conversations"} and data["username"] == user.get_username()
    assert data["preferences"] == {"instructions": "Call me Dr. Ann."}  # their own data too, never someone else's
    assert [c["id"] for c in data["conversations"]] == [c.pk for c in mine] and theirs.pk not in [c["id"] for c in data["conversations"]]
    assert [m["role"] for m in data["conversations"][0]["messages"]] == ["user", "assistant"]  # each as the one-conversation export
    assert (await AsyncClient().get("/api/conversations/export/")).status_code in (401, 403)
