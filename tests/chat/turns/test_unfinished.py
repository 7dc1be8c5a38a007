"""An answer cut at the output limit or the limit of model calls says so, live, stored, reloaded and rebuilt."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from chat.events import CompleteEvent
from chat.models import Message, Run
from chat.providers import scripted as s
from chat.providers.base import MessageEnd, TextDelta, Usage
from chat.runs.store import run_terminal_event
from tests.chat.test_aisdk import body, post
from tests.chat.test_http import TokenClient, auth_headers
from tests.conftest import token_for
from tests.protocol import check_http

pytestmark = pytest.mark.django_db(transaction=True)


def chat(user: Any, cmid: str, message: str = "Tell me everything.") -> dict[str, Any]:
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    r = client.post("/api/chat", {"client_message_id": cmid, "message": message}, content_type="application/json")
    assert r.status_code == 200, r.content
    return dict(r.json())


def reloaded_answer(user: Any, conversation_id: int) -> dict[str, Any]:
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    return dict(client.get(f"/api/conversations/{conversation_id}/").json()["messages"][-1])


def test_an_answer_cut_at_the_output_limit_says_so_everywhere(user: Any, scripted: Any) -> None:
    scripted.enqueue([TextDelta("The first half of a long answer, and then"), MessageEnd("max_tokens", Usage(10, 2000))])
    answer = chat(user, "cut1")
    assert answer["stop_reason"] == "max_tokens" and answer["message"].endswith("and then")
    assert Message.objects.get(pk=answer["message_id"]).stop_reason == Message.StopReason.MAX_TOKENS
    assert reloaded_answer(user, answer["conversation_id"])["stop_reason"] == "max_tokens"
    # a follower whose log expired gets the terminal event rebuilt from the database, with the same field
    run = Run.objects.select_related("assistant_message").get(pk=answer["run_id"])
    rebuilt = run_terminal_event(run=run, staff=False, seq=5)
    assert isinstance(rebuilt, CompleteEvent) and rebuilt.payload.stop_reason == "max_tokens"
    check_http(200, rebuilt.payload.model_dump_json())


def test_an_answer_that_ended_as_meant_has_no_stop_reason(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("A short, complete answer."))
    answer = chat(user, "whole1")
    assert "stop_reason" not in answer
    assert reloaded_answer(user, answer["conversation_id"])["stop_reason"] == ""
    run = Run.objects.select_related("assistant_message").get(pk=answer["run_id"])
    rebuilt = run_terminal_event(run=run, staff=False, seq=5)
    assert isinstance(rebuilt, CompleteEvent) and "stop_reason" not in json.loads(rebuilt.model_dump_json())["payload"]


def test_a_turn_stopped_at_its_limit_of_model_calls_says_so(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_MAX_ITERATIONS = 1  # the one call asks for a tool anyway: it is refused and the turn ends there
    scripted.enqueue(s.tool_call("calculate", {"expression": "6*7"}, before="Let me work that out. "))
    answer = chat(user, "limit1", "What is 6*7?")
    assert answer["stop_reason"] == "max_iterations"
    assert "over the limit" in answer["tool_history"][0]["output"]
    assert reloaded_answer(user, answer["conversation_id"])["stop_reason"] == "max_iterations"


def test_a_cancelled_or_failed_turn_is_not_marked_unfinished(user: Any, scripted: Any) -> None:
    """Only a complete answer carries the mark: a failed turn already says it is incomplete by its status."""
    scripted.enqueue([TextDelta("partial "), s.ProviderError("overloaded", "The model is overloaded.")])
    client = Client(headers={"Authorization": f"Token {token_for(user)}"})
    r = client.post("/api/chat", {"client_message_id": "fail1", "message": "hi"}, content_type="application/json")
    assert r.status_code == 502
    msg = Message.objects.get(role=Message.Role.ASSISTANT, conversation__owner=user)
    assert msg.status == Message.Status.ERROR and msg.stop_reason == ""


async def test_the_ai_sdk_finishes_a_cut_answer_with_length(user: Any, scripted: Any) -> None:
    scripted.enqueue([TextDelta("Half an answer"), MessageEnd("max_tokens", Usage(10, 2000))], s.text("A whole answer."))
    client = TokenClient(await auth_headers(user))
    _, cut = await post(client, body("len1", "tell me"))
    finish = next(c for c in cut if isinstance(c, dict) and c["type"] == "finish")
    complete = next(c for c in cut if isinstance(c, dict) and c["type"] == "data-pagechat-complete")["data"]
    assert finish["finishReason"] == "length" and complete["stop_reason"] == "max_tokens"
    _, whole = await post(client, body("len2", "tell me"))
    assert next(c for c in whole if isinstance(c, dict) and c["type"] == "finish")["finishReason"] == "stop"
