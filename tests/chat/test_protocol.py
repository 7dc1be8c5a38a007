"""The protocol as code: models, builders and the committed schema agree, and a live server's frames validate."""
from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any, get_args

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient
from hypothesis import given, settings as hsettings, strategies as st

from chat.agent.types import ToolProgress, ToolResult
from chat.events import (
    CLIENT_FRAMES,
    RUN_EVENTS,
    SERVER_EVENTS,
    CancelledEvent,
    ClientToolCallEvent,
    CompleteEvent,
    Envelope,
    ErrorEvent,
    StateEvent,
    StatusEvent,
    TextDeltaEvent,
    ToolApprovalEvent,
    ToolCompleteEvent,
    ToolProgressEvent,
    ToolStartEvent,
    complete_payload_build,
    error_event,
    protocol_schemas,
)
from chat.events.errors import ERROR_CODES, ERRORS, BadRequest, ErrorCode, ServiceError
from chat.management.commands.chat_protocol_schema import schema_text
from chat.providers import scripted as s
from chat.runs import manager
from tests.conftest import token_for, ws_connect
from tests.protocol import SCHEMA_DIR, VALIDATED, ProtocolViolation, check_event, check_wire, sse_events
from tools.registry import registry as tool_registry
from tools.spec import ToolSpec

# ---- models, builders and the committed files ---------------------------------------------------


def test_the_committed_schema_files_are_generated_from_the_models() -> None:
    for name, schema in protocol_schemas().items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == schema_text(schema), f"{name} is stale"
    events = json.loads((SCHEMA_DIR / "events.schema.json").read_text())
    assert events["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {ref["$ref"].rsplit("/", 1)[1] for ref in events["oneOf"]} == {m.__name__ for m in SERVER_EVENTS}


def test_every_frame_model_is_closed_and_typed() -> None:
    for model in (*SERVER_EVENTS, *CLIENT_FRAMES):
        assert model.model_config.get("extra") == "forbid", model
        assert len(get_args(model.model_fields["type"].annotation)) == 1, f"{model.__name__}.type is not one Literal"
        assert next(iter(model.model_fields)) == "type", "type comes first: readers find it in the first bytes"


def test_the_error_codes_are_one_closed_set_with_one_http_status_each() -> None:
    assert set(ERRORS) == ERROR_CODES == set(get_args(ErrorCode))
    assert all(100 <= info.http_status < 600 and info.meaning for info in ERRORS.values())
    for cls in (ServiceError, *ServiceError.__subclasses__()):
        assert cls.code in ERROR_CODES
    assert BadRequest("x", code="too_large").code == "too_large"
    with pytest.raises(ValueError):
        error_event("no_such_code")  # type: ignore[arg-type]
    schema_codes = json.loads((SCHEMA_DIR / "events.schema.json").read_text())["$defs"]["FrameError"]["properties"]["code"]["enum"]
    assert set(schema_codes) == ERROR_CODES


def test_the_protocol_reference_lists_every_code_with_its_status() -> None:
    doc = (SCHEMA_DIR.parent / "protocol.md").read_text(encoding="utf-8")
    for code, info in ERRORS.items():
        assert f"| `{code}` | {info.http_status} |" in doc, code
    for model in (*SERVER_EVENTS, *CLIENT_FRAMES):
        assert f"`{get_args(model.model_fields['type'].annotation)[0]}`" in doc, model.__name__


_ids = st.text(min_size=1, max_size=40)
_conversations = st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
_seqs = st.integers(min_value=0, max_value=2**53)


@hsettings(max_examples=1500, deadline=None)
@given(run_id=_ids, conversation_id=_conversations, seq=_seqs, text=st.text(max_size=300))
def test_the_fast_text_delta_builder_equals_the_validated_model(run_id: str, conversation_id: int | None, seq: int, text: str) -> None:
    env = Envelope(run_id, conversation_id)
    fast = TextDeltaEvent.wire(env, seq, text=text)
    assert fast == TextDeltaEvent.build(env, seq, text=text).model_dump_json()
    assert check_event(json.loads(fast))["text"] == text


@hsettings(max_examples=200, deadline=None)
@given(before=st.text(max_size=20), surrogate=st.characters(categories=["Cs"]), after=st.text(max_size=20))
def test_text_the_model_cannot_encode_fails_the_fast_builder_too(before: str, surrogate: str, after: str) -> None:
    env = Envelope("r", 1)
    text = before + surrogate + after
    with pytest.raises(ValueError):
        TextDeltaEvent.build(env, 1, text=text).model_dump_json()
    with pytest.raises(ValueError):
        TextDeltaEvent.wire(env, 1, text=text)


@hsettings(max_examples=200, deadline=None)
@given(run_id=_ids, conversation_id=_conversations, code=st.sampled_from(sorted(ERROR_CODES)), message=st.text(max_size=50))
def test_a_seq_0_frame_is_cut_exactly_around_its_seq(run_id: str, conversation_id: int | None, code: ErrorCode, message: str) -> None:
    env = Envelope(run_id, conversation_id)
    before, after = env.around_seq(ErrorEvent.wire(env, 0, code=code, message=message))
    assert before + "17" + after == ErrorEvent.wire(env, 17, code=code, message=message)


def _samples() -> Iterator[str]:
    env = Envelope(str(uuid.uuid4()), 7)
    payload = complete_payload_build(
        message="**hi** [[tool:0]]", suggested_values=[{"label": "Yes", "value": "yes"}],
        suggested_actions=[{"label": "Go", "action": "navigate", "handler": "client", "data": {"route": "/"}},
                           {"label": "Do", "action": "do", "handler": "server", "token": "t", "style": "primary"}],
        custom_payload={"payload_id": "ab12", "type": "t", "data": {"x": 1}, "summary": "t"},
        tool_history=[{"tool_name": "calculate", "input": {"expression": "1+1"}, "output": "2"}],
        conversation_id=7, message_id=3, run_id=env.run_id, usage={"input_tokens": 1, "output_tokens": 2}, diagnostics={"k": [1]},
    )
    yield StatusEvent.wire(env, 1, message="Thinking…")
    yield TextDeltaEvent.wire(env, 2, text="a\n\"b\"\u2028é")
    yield ToolStartEvent.wire(env, 3, tool="calculate", input={"expression": "1+1"}, tool_use_id="toolu_1")
    yield ToolProgressEvent.wire(env, 4, tool="calculate", stage="run", message="", progress=0.5, data={"n": 1.5})
    yield ToolApprovalEvent.wire(env, 5, tool="charge", input={}, tool_use_id="toolu_2")
    yield ToolCompleteEvent.wire(env, 6, tool="calculate", index=0)
    yield ClientToolCallEvent.wire(env, 7, tool="switch_tab", input={"tab": "a"}, tool_use_id="toolu_3", tab_id="t", timeout_ms=30000,
                                   title="Switch tab")
    yield StateEvent.wire(env, 8, state={"tab": "a"}, delta=[{"op": "replace", "path": "/tab", "value": "a"}])
    yield CompleteEvent.wire(env, 8, payload=payload)
    yield ErrorEvent.wire(env, 8, code="interrupted")
    yield CancelledEvent.wire(env, 8)
    yield error_event("busy").wire()
    yield error_event("resync", run_id=env.run_id).wire()


def test_every_builder_output_validates_and_types_come_first() -> None:
    kinds = set()
    for wire in _samples():
        event = check_wire(wire)
        assert wire.startswith(f'{{"type":"{event["type"]}"')
        kinds.add(event["type"])
    assert kinds == {m.model_fields["type"].default for m in RUN_EVENTS}


@pytest.mark.parametrize("bad", [
    {"type": "text_delta", "run_id": "r", "seq": 1, "conversation_id": 1, "text": 5},
    {"type": "text_delta", "run_id": "r", "seq": 1, "conversation_id": 1, "text": "x", "extra": 1},
    {"type": "text_delta", "run_id": "r", "conversation_id": 1, "text": "x"},
    {"type": "error", "code": "oops", "message": "m"},
    {"type": "error", "run_id": "r", "seq": 1, "conversation_id": 1, "code": "internal"},
    {"type": "complete", "run_id": "r", "seq": 2, "conversation_id": 1, "payload": {"message": "m"}},
    {"type": "thinking", "run_id": "r", "seq": 1, "conversation_id": 1},
])
def test_a_deliberately_invalid_frame_is_caught(bad: dict[str, Any]) -> None:
    with pytest.raises(ProtocolViolation):
        check_event(bad)


@pytest.mark.django_db(transaction=True)
async def test_the_websocket_client_catches_a_frame_the_server_should_not_send(user: Any, scripted: Any, monkeypatch: Any) -> None:
    def off_protocol(cls: Any, env: Envelope, seq: int, *, text: str) -> str:
        return f'{{"type":"text_delta",{env.head}{seq}{env.tail},"text":{json.dumps(text)},"debug":true}}'

    monkeypatch.setattr(TextDeltaEvent, "wire", classmethod(off_protocol))
    scripted.enqueue(s.text("hello"))
    ws, _ = await ws_connect(user)
    await ws.chat("hi")
    assert (await ws.recv())["type"] == "status"
    with pytest.raises(ProtocolViolation, match="debug"):
        await ws.recv()
    await ws.close()


# ---- a live server's frames, transport by transport ----------------------------------------------


@pytest.fixture
def tools_for_protocol() -> Iterator[None]:
    """A streaming tool (progress events) and one that needs approval."""
    def crunch(tool_input: dict[str, Any], ctx: Any) -> Any:
        yield ToolProgress("crunching", "half way", 0.5, {"done": 1})
        return ToolResult("crunched", payload={"type": "crunch_result", "data": {"n": 1}})

    specs = [
        ToolSpec(name="crunch", description="Crunch.", input_schema={"type": "object", "properties": {}}, executor=crunch, is_global=True),
        ToolSpec(name="guarded", description="Needs approval.", input_schema={"type": "object", "properties": {}},
                 executor=lambda i, c: "guarded ok", is_global=True, requires_approval=True),
    ]
    for spec in specs:
        tool_registry.register(spec)
    yield
    for spec in specs:
        tool_registry.unregister(spec.name)


@pytest.mark.django_db(transaction=True)
async def test_a_live_servers_frames_validate_in_every_flow(
    user: Any, other_user: Any, staff_user: Any, scripted: Any, tools_for_protocol: None
) -> None:
    before = VALIDATED.copy()
    ws, _ = await ws_connect(user)
    # a plain turn, then a tool turn (progress, a payload card, suggestions), then one that asks for approval
    scripted.enqueue(s.text("Hello ", "there\nSUGGESTED_VALUES: [\"yes\"]"))
    await ws.chat("hi")
    done = await ws.until_terminal()
    assert done[-1]["type"] == "complete" and done[-1]["payload"]["suggested_values"] == [{"label": "yes", "value": "yes"}]
    conversation = done[-1]["conversation_id"]
    scripted.enqueue(s.tool_call("crunch", {}), s.text("Crunched."))
    await ws.chat("crunch it", conversation_id=conversation)
    tool_turn = await ws.until_terminal()
    assert {"tool_start", "tool_progress", "tool_complete", "complete"} <= {e["type"] for e in tool_turn}
    scripted.enqueue(s.tool_call("guarded", {}, tool_id="toolu_g"), s.text("Guarded."))
    await ws.chat("guard it", conversation_id=conversation)
    while (ev := await ws.recv())["type"] != "tool_approval":
        pass
    await ws.send({"type": "chat.approve", "run_id": ev["run_id"], "tool_use_id": "toolu_g", "approved": True})
    assert (await ws.until_terminal())[-1]["type"] == "complete"
    # cancel, then resume the cancelled run from seq 0 (a replay from memory)
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("slow"), gate])
    await ws.chat("slow one", conversation_id=conversation)
    first = await ws.recv()
    # cancelled mid-answer: once the model has started (a cancel before it would leave its script to the next turn)
    assert (await ws.recv())["text"] == "slow"
    await ws.send({"type": "chat.cancel", "run_id": first["run_id"]})
    assert (await ws.until_terminal())[-1]["type"] == "cancelled"
    await ws.send({"type": "chat.resume", "run_id": first["run_id"], "after_seq": 0})
    assert (await ws.until_terminal())[-1]["type"] == "cancelled"
    # bad frames, and another user's run id, are frame-level errors
    for bad in ("{", "[]", json.dumps({"type": "chat.nope"}), json.dumps({"type": "chat.cancel"})):
        await ws.send(bad)
        assert "seq" not in await ws.recv()
    mallory, _ = await ws_connect(other_user)
    for frame in ({"type": "chat.resume", "run_id": first["run_id"], "after_seq": 0}, {"type": "chat.cancel", "run_id": first["run_id"]}):
        await mallory.send(frame)
        assert (await mallory.recv())["code"] == "not_found"
    # resync: a resume past the end of what is retained
    await ws.send({"type": "chat.resume", "run_id": first["run_id"], "after_seq": 10_000})
    assert (await ws.recv())["code"] == "resync"
    # a stored run replayed from the database once its log is gone (staff: with diagnostics)
    manager.clear()
    staff, _ = await ws_connect(staff_user)
    scripted.enqueue(s.text("for staff"))
    await staff.chat("hello")
    staff_done = (await staff.until_terminal())[-1]
    assert "diagnostics" in staff_done["payload"]
    manager.clear()
    shared: Any = manager.shared_log()
    if shared is not None:  # with Redis the run's stream is retained too: drop it, as its TTL would
        await shared.redis.delete(shared.key(staff_done["run_id"]))
    await staff.send({"type": "chat.resume", "run_id": staff_done["run_id"], "after_seq": 0})
    # (with Redis, a missing stream of a recent run is first given a few heartbeats to be rewritten by its owner)
    assert (await staff.recv(timeout=15))["payload"]["message"] == "for staff"
    for sock in (ws, mallory, staff):
        await sock.close()
    # SSE: a turn, then a resume with Last-Event-ID, then REST
    token = await database_sync_to_async(token_for)(user)
    headers = {"Authorization": f"Token {token}"}
    client = AsyncClient()
    scripted.enqueue(s.text("over ", "sse"))
    response = await client.post("/api/chat/stream", {"client_message_id": str(uuid.uuid4()), "message": "sse"},
                                 content_type="application/json", headers=headers)
    events = [e async for e in sse_events(response)]
    assert events[-1]["type"] == "complete"
    resumed = await client.get(f"/api/chat/runs/{events[0]['run_id']}/events", headers={**headers, "Last-Event-ID": f"{events[0]['run_id']}:1"})
    assert [e["seq"] for e in [e async for e in sse_events(resumed)]] == [e["seq"] for e in events[1:]]
    scripted.enqueue(s.text("over rest"))
    body = await client.post("/api/chat", {"client_message_id": str(uuid.uuid4()), "message": "rest"},
                             content_type="application/json", headers=headers)
    assert body.status_code == 200 and body.json()["message"] == "over rest"
    assert (await client.post("/api/chat", "{", content_type="application/json", headers=headers)).status_code == 400
    assert (await client.post("/api/chat", {"message": "x"}, content_type="application/json")).status_code == 401
    assert (await client.post(f"/api/chat/runs/{uuid.uuid4()}/cancel", headers=headers)).status_code == 404
    checked = VALIDATED - before
    for kind in ("status", "text_delta", "tool_start", "tool_progress", "tool_complete", "tool_approval", "complete",
                 "cancelled", "frame_error", "rest_complete", "http_error"):
        assert checked[kind] > 0, f"no {kind} frame was validated"



