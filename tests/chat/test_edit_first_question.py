"""Editing (chat.send's `replace_last: "question"`): the first question's edit gives the conversation a new title; only a
typed question can be edited (a chip or a button click is not words the user wrote)."""
from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from channels.db import database_sync_to_async

from chat.models import Conversation, Message
from chat.providers import scripted as s
from chat.providers.scripted import ScriptedProvider
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


class TitledScripted(ScriptedProvider):
    """The scripted provider, asked for titles too (one enqueued script per title, like a hosted model)."""

    generates_titles: ClassVar[bool] = True


async def _turn(ws: Any, message: str, **fields: Any) -> dict[str, Any]:
    await ws.chat(message, **fields)
    events = await ws.until_terminal()
    assert events[-1]["type"] == "complete", events[-1]
    return events[-1]


async def _title_becomes(conversation_id: int, expected: str) -> str:
    """The conversation's title once it is `expected` (written just after the answer), or what it is after ~15 s (a
    loaded CI machine can take seconds for the title's write)."""
    title = ""
    for _ in range(300):
        title = (await Conversation.objects.aget(pk=conversation_id)).title
        if title == expected:
            break
        await asyncio.sleep(0.05)
    return title


async def test_editing_the_first_question_gives_a_new_title(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("Streams collect articles."), s.text("CRISPR edits genes."), s.text("Later."), s.text("Edited later."))
    ws, _ = await ws_connect(user)
    assert ws is not None
    conv = (await _turn(ws, "could you tell me what the oncology stream is about?"))["conversation_id"]
    assert await _title_becomes(conv, "Oncology stream") == "Oncology stream"
    await _turn(ws, "Tell me about CRISPR gene editing", conversation_id=conv, replace_last="question")
    # the title follows the new first question (the old one's title went with it)
    assert await _title_becomes(conv, "CRISPR gene editing") == "CRISPR gene editing"
    # a later question's edit leaves the title alone
    await _turn(ws, "and what about base editors?", conversation_id=conv)
    await _turn(ws, "and what about prime editors?", conversation_id=conv, replace_last="question")
    await asyncio.sleep(0.3)
    assert (await Conversation.objects.aget(pk=conv)).title == "CRISPR gene editing"
    await ws.close()


async def test_a_model_made_title_is_made_again_by_the_edits_own_admitted_turn(user: Any, settings: Any) -> None:
    """With a provider that titles conversations, the edit's turn asks it again (one short call after the answer, part of
    the turn its admission let through); the conversation keeps the title it was given as generated, which is how the
    edit knows it is not a name the user gave."""
    settings.CHAT_PROVIDER = f"{__name__}.TitledScripted"
    TitledScripted.reset()
    TitledScripted.enqueue(s.text("Streams collect articles."), s.text("Oncology Streams Overview"),
                           s.text("CRISPR edits genes."), s.text("Gene Editing Basics"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    conv = (await _turn(ws, "what is the oncology stream about?"))["conversation_id"]
    assert await _title_becomes(conv, "Oncology Streams Overview") == "Oncology Streams Overview"
    await _turn(ws, "what is CRISPR?", conversation_id=conv, replace_last="question")
    assert await _title_becomes(conv, "Gene Editing Basics") == "Gene Editing Basics"
    systems = [r.system for r in TitledScripted.requests]
    assert sum("title" in sys.lower() and "six words" in sys for sys in systems) == 2  # two title calls, one per first question
    # the second title was made because the conversation kept the first as generated (in the write that stored it)
    assert (await Conversation.objects.aget(pk=conv)).generated_title == "Gene Editing Basics"
    await ws.close()
    TitledScripted.reset()


async def test_a_name_the_user_gave_survives_an_edit_of_the_first_question(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("Streams collect articles."), s.text("CRISPR edits genes."))
    ws, _ = await ws_connect(user)
    assert ws is not None
    conv = (await _turn(ws, "could you tell me what the oncology stream is about?"))["conversation_id"]
    assert await _title_becomes(conv, "Oncology stream") == "Oncology stream"
    await Conversation.objects.filter(pk=conv).aupdate(title="My oncology notes")  # renamed, as PATCH conversations/<id>/ does
    await _turn(ws, "Tell me about CRISPR gene editing", conversation_id=conv, replace_last="question")
    await asyncio.sleep(0.3)
    assert (await Conversation.objects.aget(pk=conv)).title == "My oncology notes"
    await ws.close()


@pytest.mark.parametrize("interaction_type", ["value_selected", "action_executed"])
async def test_only_a_typed_question_can_be_edited(user: Any, scripted: Any, interaction_type: str) -> None:
    scripted.enqueue(s.text("Which area?"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    conv = (await _turn(ws, "help me create a stream"))["conversation_id"]
    # the last question is a click, as the tray stores a chip (value_selected) or a server button (action_executed)
    conversation = await Conversation.objects.aget(pk=conv)
    await Message.objects.acreate(conversation=conversation, role="user", content="Accept & Create stream", interaction_type=interaction_type)
    await Message.objects.acreate(conversation=conversation, role="assistant", content="Created.")
    await ws.chat("Accept & Create stream, also add a regulatory channel", conversation_id=conv, replace_last="question")
    refusal = await ws.recv()
    assert refusal["type"] == "error" and refusal["code"] == "bad_frame" and "typed question" in refusal["message"]
    rows = await database_sync_to_async(lambda: list(Message.objects.filter(conversation_id=conv).values_list("content", flat=True)))()
    assert rows[-2:] == ["Accept & Create stream", "Created."]  # nothing deleted, nothing sent to the model
    assert len(scripted.requests) == 1
    await ws.close()
