"""A turn in the user's language: chat.send's `language` reaches the system prompt, the offline model answers in it,
and the turn's own words (a server action's Close button, its refusals) are translated while it runs."""
from __future__ import annotations

from typing import Any

import pytest
from django.utils import translation

from chat.events import ChatSend
from chat.models import Run
from chat.turns.actions import close_button
from chat.turns.work import turn_language
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("text", "") for e in events if e["type"] == "text_delta")


async def test_a_german_turn_is_answered_in_german(user: Any) -> None:
    ws, _ = await ws_connect(user)
    await ws.chat("hello", language="de", context={"current_page": "home"})
    events = await ws.until_terminal()
    assert events[-1]["type"] == "complete"
    assert _text(events).startswith("Hallo! Ich bin das Offline-Modell")
    run = await Run.objects.aget(pk=events[-1]["payload"]["run_id"])
    assert "# LANGUAGE\nThe user's language is German (`de`)" in run.diagnostics["system_prompt"]
    # the next message without a language: English again (nothing sticks to the connection)
    await ws.chat("hello", conversation_id=events[-1]["payload"]["conversation_id"])
    assert _text(await ws.until_terminal()).startswith("Hello!")
    await ws.close()


async def test_a_language_that_is_not_a_tag_is_refused(user: Any) -> None:
    ws, _ = await ws_connect(user)
    await ws.chat("hello", language="German please")
    error = await ws.recv()
    assert error["type"] == "error" and error["code"] == "bad_frame" and "language" in error["message"]
    await ws.close()


def test_the_turns_language_is_one_the_site_offers() -> None:
    assert turn_language(ChatSend(message="x", language="de-AT")) == "de"
    assert turn_language(ChatSend(message="x", language="ja")) is None  # not in LANGUAGES
    assert turn_language(ChatSend(message="x")) is None
    assert close_button()["label"] == "Close"
    with translation.override("fr"):
        assert close_button()["label"] == "Fermer"
