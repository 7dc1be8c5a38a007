"""Provider faults end to end: the real AnthropicProvider (real SDK) against the local fake Anthropic server,
through the websocket consumer. Each fault ends in retry-then-success or one clean terminal `error`, the
partial text saved, and the next turn's history (as the fake server received it) valid."""
from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.conftest import ws_connect
from tests.fakes.anthropic_server import FakeAnthropicServer, error_mid_stream, overloaded, rate_limited, stall, text_response, tool_use_response
from tests.resilience.invariants import FIGURES, RunTrace, assert_valid_history, check_db, check_persisted_text, db_state_orm

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake(settings: Any) -> Any:
    with FakeAnthropicServer() as server:
        settings.CHAT_PROVIDER = "chat.providers.anthropic.AnthropicProvider"
        settings.ANTHROPIC_BASE_URL = server.base_url
        settings.ANTHROPIC_API_KEY = "sk-ant-fake"
        settings.CHAT_PROVIDER_MAX_RETRIES = 2
        settings.CHAT_PROVIDER_STALL_TIMEOUT = 0.5
        settings.CHAT_PROVIDER_TIMEOUT = 5.0
        yield server


FAULTS = {
    # name: (scenarios for the faulty turn, expected terminal, expected streamed text)
    "429_retry_after": ([rate_limited("0.01"), text_response("Hel", "lo")], "complete", "Hello"),
    "529_overloaded": ([overloaded("0.01"), text_response("after ", "529")], "complete", "after 529"),
    "529_forever": ([overloaded("0.01")] * 3, "error", ""),
    "stall_before_output": ([stall(), text_response("late ", "but fine")], "complete", "late but fine"),
    "stall_after_text": ([stall("partial ", "text")], "error", "partial text"),
    "error_event_before_output": ([error_mid_stream(), text_response("second ", "try")], "complete", "second try"),
    "error_event_after_text": ([error_mid_stream("cut ", "off")], "error", "cut off"),
    "malformed_tool_json": ([tool_use_response("calculate", raw_json='{"expression": "1+', text="Let me. "),
                             text_response("The input was broken.")], "complete", None),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_provider_fault_then_next_turn(user: Any, fake: FakeAnthropicServer, fault: str) -> None:
    scenarios, terminal, text = FAULTS[fault]
    fake.enqueue(*scenarios)
    ws, _ = await ws_connect(user)
    cmid = await ws.chat("hello model")
    trace = RunTrace()
    for ev in await ws.until_terminal(timeout=20):
        trace.add(ev)
    trace.check()
    assert trace.terminal["type"] == terminal, trace.terminal
    if text is not None:
        assert trace.text == text  # retries never duplicated text
    if terminal == "error":
        assert trace.terminal["code"] in ("overloaded", "timeout", "provider_unavailable"), trace.terminal
    if fault == "malformed_tool_json":
        assert any(e["type"] == "tool_complete" for e in trace.events)
    # the next turn in the same conversation: accepted, and its history is what the API accepts
    fake.enqueue(text_response("next ", "turn"))
    cmid2 = await ws.chat("and now?", conversation_id=trace.terminal["conversation_id"])
    nxt = RunTrace()
    for ev in await ws.until_terminal(timeout=20):
        nxt.add(ev)
    nxt.check()
    assert nxt.terminal["type"] == "complete" and nxt.text == "next turn"
    for request in fake.message_requests:
        assert_valid_history(request.body["messages"])
    last = fake.message_requests[-1].body["messages"]
    assert last[-1]["content"] == "and now?" or last[-1]["content"][-1].get("text") == "and now?"
    state = await sync_to_async(db_state_orm)()
    check_db(state, acked=[(user.pk, cmid), (user.pk, cmid2)])
    check_persisted_text(state, trace)
    check_persisted_text(state, nxt)
    FIGURES.trial(f"provider_fault_{fault}")
    await ws.close()
