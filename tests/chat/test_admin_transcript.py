"""The conversation's admin page reads as the conversation: a transcript, answers rendered and sanitised."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from chat.admin import TRANSCRIPT_MESSAGES
from chat.models import Conversation, Message

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
    body = admin_client.get(f"/admin/pagechat/conversation/{conv.pk}/change/").content.decode()
    transcript = body[body.index('<div class="pagechat-transcript">'):]
    assert "5 earlier messages" in transcript
    assert "message number 4." not in transcript.split("</fieldset>")[0] and f"message number {TRANSCRIPT_MESSAGES + 4}." in transcript
