"""The conversation's admin page reads as the conversation: a transcript, answers rendered and sanitised."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from chat.admin.common import INLINE_ROWS
from chat.admin.conversations import TRANSCRIPT_MESSAGES
from chat.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db


def test_the_transcript_shows_the_conversation_safely_with_what_staff_should_know(admin_client: Client, user: Any) -> None:
    conv = Conversation.objects.create(owner=user, title="Reagents")
    Message.objects.create(conversation=conv, role="user", content="Is <script>alert(1)</script> safe?\n\nSecond paragraph")
    Message.objects.create(conversation=conv, role="assistant", content="first take", replaced=True)
    Message.objects.create(conversation=conv, role="assistant", content="It is **bold** [[tool:0]] <img src=x onerror=alert(2)>",
                           feedback="bad", stop_reason="max_tokens",
                           tool_history=[{"tool_name": "search_articles", "input": {}, "output": "3 hits"}])
    body = admin_client.get(f"/admin/pagechat/conversation/{conv.pk}/change/").content.decode()
    transcript = body[body.index('<div class="pagechat-transcript">'):]
    transcript = transcript[:transcript.index("</fieldset>")]
    assert "Is &lt;script&gt;alert(1)&lt;/script&gt; safe?" in transcript and "<script>alert" not in transcript  # a question is text
    assert "<p>Second paragraph</p>" in transcript
    assert "<strong>bold</strong>" in transcript and "<img" not in transcript  # an answer, rendered and sanitised ...
    assert "&lt;img src=x onerror=alert(2)&gt;" in transcript  # ... its HTML shown as text
    assert transcript.index("first take") < transcript.index("<strong>bold</strong>")
    assert "replaced by a regenerate" in transcript
    assert "feedback: bad" in transcript and "stopped at a limit: max_tokens" in transcript and "tools: search_articles" in transcript


def test_a_long_conversation_shows_its_latest_messages(admin_client: Client, user: Any) -> None:
    conv = Conversation.objects.create(owner=user, title="Long")
    Message.objects.bulk_create(Message(conversation=conv, role="user", content=f"message number {i}.") for i in range(TRANSCRIPT_MESSAGES + 5))
    with CaptureQueriesContext(connection) as queries:
        body = admin_client.get(f"/admin/pagechat/conversation/{conv.pk}/change/").content.decode()
    transcript = body[body.index('<div class="pagechat-transcript">'):]
    assert "5 earlier messages" in transcript
    # the page says how many messages there are twice (records, transcript) and counts them once
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper() and '"pagechat_message"' in q["sql"]]
    assert len(counts) == 1, counts
    assert "message number 4." not in transcript.split("</fieldset>")[0] and f"message number {TRANSCRIPT_MESSAGES + 4}." in transcript


def test_a_long_conversations_page_lists_its_latest_rows_and_links_to_all(admin_client: Client, user: Any, other_user: Any) -> None:
    """Thousands of messages are not thousands of inline forms: the latest INLINE_ROWS of messages and runs, and
    links to the message and run lists filtered to this conversation."""
    conv = Conversation.objects.create(owner=user, title="Long")
    Message.objects.bulk_create(Message(conversation=conv, role="user", content=f"row {i}") for i in range(INLINE_ROWS + 7))
    Run.objects.bulk_create(Run(conversation=conv, provider="offline", status=Run.Status.COMPLETED) for _ in range(INLINE_ROWS + 3))
    theirs = Conversation.objects.create(owner=other_user, title="Theirs")
    Message.objects.create(conversation=theirs, role="user", content="not this one")
    body = admin_client.get(f"/admin/pagechat/conversation/{conv.pk}/change/").content.decode()
    assert body.count('class="inline-related') - body.count('class="inline-related empty-form') == INLINE_ROWS  # the messages
    assert body.count('<tr class="form-row') == INLINE_ROWS  # the runs
    assert f"{INLINE_ROWS + 7} messages" in body and f"{INLINE_ROWS + 3} runs" in body
    assert "the latest 50 of each are listed below" in body
    messages_list = admin_client.get(f"/admin/pagechat/message/?conversation__id__exact={conv.pk}")
    assert f'href="/admin/pagechat/message/?conversation__id__exact={conv.pk}"' in body
    assert messages_list.status_code == 200 and f"{INLINE_ROWS + 7} messages" in messages_list.content.decode()
    runs_list = admin_client.get(f"/admin/pagechat/run/?conversation__id__exact={conv.pk}")
    assert runs_list.status_code == 200 and f"{INLINE_ROWS + 3} runs" in runs_list.content.decode()
