"""The title of a conversation is one more model call: its tokens and cost are the first run's, so the day's budget
and the cost report count it like every other call."""
from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from channels.db import database_sync_to_async

from chat.models import Conversation, Run
from chat.providers import scripted as s
from chat.providers.base import Usage
from chat.quotas.budgets import spent_in_database
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_title_calls_tokens_and_cost_are_the_runs(user: Any, scripted: Any, settings: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(scripted, "generates_titles", True)
    settings.CHAT_MODEL = "priced-model"
    settings.CHAT_PRICES = {"priced-model": {"input": 1_000_000, "output": 2_000_000}}  # $1 an input token: easy sums
    scripted.enqueue(s.text("Streams collect articles.", usage=Usage(100, 5)), s.text("Oncology stream", usage=Usage(40, 3)))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("what is the oncology stream about?")
    frame = (await ws.until_terminal())[-1]
    await ws.close()
    conversation_id = frame["payload"]["conversation_id"]
    for _ in range(100):  # the title is written just after the answer is delivered
        if (await Conversation.objects.aget(pk=conversation_id)).title == "Oncology stream":
            break
        await asyncio.sleep(0.05)
    assert len(scripted.requests) == 2 and scripted.requests[1].tool_choice == "none"  # the answer, then the title
    run = await Run.objects.aget(conversation_id=conversation_id)
    for _ in range(100):  # its usage lands after the title
        run = await Run.objects.aget(conversation_id=conversation_id)
        if run.input_tokens == 140:
            break
        await asyncio.sleep(0.05)
    assert (run.input_tokens, run.output_tokens) == (140, 8)
    assert run.cost_usd == Decimal(140 + 2 * 8)
    assert (await database_sync_to_async(spent_in_database)(user_id=user.pk)).tokens == 148  # what the daily token budget sums
