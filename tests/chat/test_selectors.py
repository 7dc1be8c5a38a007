"""chat.selectors: the reads a turn makes (history_window is written in SQL, so it is checked field by field)."""
from __future__ import annotations

from typing import Any

import pytest

from chat import selectors
from chat.models import Attachment, Conversation, Message
from chat.prompt.history import StoredMessage, estimate_tokens

pytestmark = pytest.mark.django_db


def _conversation(user: Any, n: int) -> tuple[Conversation, list[Message]]:
    conv = Conversation.objects.create(owner=user, title="t")
    msgs = []
    for i in range(n):
        if i % 2 == 0:
            msgs.append(Message.objects.create(conversation=conv, role=Message.Role.USER, content=f"q{i}"))
        else:
            blocks = [{"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}]}]
            payloads = [{"payload_id": f"p{i}", "type": "chart", "summary": f"chart {i}", "data": {"x": [1, 2]}}] if i % 4 == 1 else []
            msgs.append(Message.objects.create(conversation=conv, role=Message.Role.ASSISTANT, content=f"a{i}",
                                               provider_messages=blocks, payloads=payloads))
    return conv, msgs


def test_history_window_is_the_last_messages_in_order_with_their_blocks(user: Any) -> None:
    conv, msgs = _conversation(user, 10)
    stored, manifest = selectors.history_window(conversation_id=conv.pk, limit=4)
    assert [s.content for s in stored] == ["q6", "a7", "q8", "a9"]
    assert stored[1] == StoredMessage("assistant", "a7", [{"role": "assistant", "content": [{"type": "text", "text": "a7"}]}], [])
    assert stored[0].provider_messages == [] and stored[0].attachments == []
    # the manifest: payload summaries among the window's answers, oldest first
    assert manifest == [{"payload_id": "p9", "type": "chart", "summary": "chart 9"}]
    # upto_id: everything before the current turn's own messages
    stored, manifest = selectors.history_window(conversation_id=conv.pk, limit=4, upto_id=msgs[8].pk)
    assert [s.content for s in stored] == ["q4", "a5", "q6", "a7"]
    assert [m["payload_id"] for m in manifest] == ["p5"]


def test_history_window_gives_a_user_messages_files_in_the_order_sent(user: Any) -> None:
    conv, msgs = _conversation(user, 4)
    for position, name in ((1, "second.pdf"), (0, "first.png")):
        Attachment.objects.create(owner=user, conversation=conv, message=msgs[2], file=f"x/{name}", name=name,
                                  content_type="image/png" if name.endswith("png") else "application/pdf", size=10,
                                  sha256="0" * 64, position=position)
    Attachment.objects.create(owner=user, file="x/unsent.png", name="unsent.png", content_type="image/png", size=1, sha256="0" * 64)
    stored, _ = selectors.history_window(conversation_id=conv.pk, limit=10)
    assert [b["name"] for b in stored[2].attachments] == ["first.png", "second.pdf"]
    assert all(s.attachments == [] for i, s in enumerate(stored) if i != 2)
    assert selectors.history_window(conversation_id=conv.pk + 1, limit=10) == ([], [])


def test_a_text_block_is_counted_by_its_text() -> None:
    text = "word " * 400
    assert estimate_tokens([{"type": "text", "text": text}]) == estimate_tokens(text)
    tool = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "x" * 400}}
    assert estimate_tokens([tool]) > 100  # other blocks by their JSON size
