"""Process death, graceful shutdown and at-most-once side effects, in one process.

A dead owner is simulated by a run whose heartbeat stopped (its handle gone from the manager); the real
SIGKILL of a daphne process is in test_cluster.py."""
from __future__ import annotations

import asyncio
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from chat import services
from chat.events import ChatSend
from chat.models import Conversation, Message, Run, ToolCall
from chat.providers import scripted as s
from chat.runs import manager
from chat.turns import admission
from tests.conftest import ws_connect
from tests.resilience.invariants import FIGURES, RunTrace, assert_valid_history, check_db, check_persisted_text, db_state_orm
from tools.registry import registry as tool_registry
from tools.spec import ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)


async def follow(ws: Any, trace: RunTrace, *, until: str | None = None, timeout: float = 10) -> None:
    """Read run events into the trace until the terminal (or the first event of type `until`)."""
    while not trace.done:
        ev = await ws.recv(timeout)
        assert "seq" in ev, ev
        if ev["seq"] <= trace.last_seq:
            continue  # a resend replays from seq 1: the client skips what it has
        trace.add(ev)
        if until and ev["type"] == until:
            return


@pytest.fixture
def stored_dead_run(user: Any) -> dict[str, Any]:
    """A run left by a process that died while a tool was running: heartbeat a minute old, the assistant
    message flushed with partial text and an unanswered tool_use."""
    conv = Conversation.objects.create(owner=user, title="died")
    umsg = Message.objects.create(conversation=conv, role="user", content="charge it", client_message_id="cm-dead")
    run = Run.objects.create(conversation=conv, user_message=umsg, status="running", owner_process="gone:1:x",
                             heartbeat_at=timezone.now() - timedelta(seconds=60))
    Message.objects.create(
        conversation=conv, role="assistant", status="streaming", run=run, content="Charging now. ",
        provider_messages=[{"role": "assistant", "content": [
            {"type": "text", "text": "Charging now. "},
            {"type": "tool_use", "id": "toolu_dead", "name": "calculate", "input": {"expression": "1+1"}}]}],
    )
    return {"conversation_id": conv.pk, "run_id": str(run.pk)}


async def test_a_dead_owners_run_is_swept_by_the_heartbeat(stored_dead_run: dict[str, Any], settings: Any) -> None:
    settings.CHAT_STALE_AFTER = 2.0
    await manager.tick()
    run = await Run.objects.aget(pk=stored_dead_run["run_id"])
    assert run.status == "interrupted" and run.error_code == "interrupted"
    msg = await Message.objects.aget(run=run, role="assistant")
    assert msg.status == "interrupted" and msg.content == "Charging now. "  # what was flushed is kept
    FIGURES.trial("inprocess_sweep")


async def test_next_message_after_a_dead_run_is_accepted_with_a_valid_history(
    user: Any, scripted: Any, stored_dead_run: dict[str, Any], settings: Any
) -> None:
    settings.CHAT_STALE_AFTER = 2.0
    scripted.enqueue(s.text("Fresh ", "answer."))
    ws, _ = await ws_connect(user)
    await ws.chat("are you there?", conversation_id=stored_dead_run["conversation_id"])
    trace = RunTrace()
    await follow(ws, trace)
    trace.check()
    assert trace.terminal["type"] == "complete"
    sent = scripted.requests[0].messages
    assert_valid_history(sent)
    tool_results = [b for m in sent if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in tool_results] == ["toolu_dead"] and tool_results[0]["is_error"]
    # the dead run's message, resent, answers with its (interrupted) outcome and starts nothing
    await ws.chat("charge it", client_message_id="cm-dead", conversation_id=stored_dead_run["conversation_id"])
    outcome = await ws.recv()
    assert outcome["type"] == "error" and outcome["code"] == "interrupted" and outcome["run_id"] == stored_dead_run["run_id"]
    state = await sync_to_async(db_state_orm)()
    check_db(state, acked=[(user.pk, "cm-dead")])
    check_persisted_text(state, trace)
    FIGURES.trial("inprocess_next_after_death")
    await ws.close()


async def test_a_run_swept_while_its_owner_lived_keeps_the_verdict(user: Any, scripted: Any, settings: Any) -> None:
    """An owner that looked dead (no heartbeat) and comes back must not overwrite `interrupted`."""
    settings.CHAT_STALE_AFTER = 1.0
    settings.CHAT_FLUSH_INTERVAL = 0.05
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("before "), 0.01, s.TextDelta("the stall "), gate, s.TextDelta("after")])
    ws, _ = await ws_connect(user)
    await ws.chat("go")
    trace = RunTrace()
    while trace.text != "before the stall ":
        trace.add(await ws.recv())
    await asyncio.sleep(0.2)  # one flush window
    handle = manager.handles.pop(trace.run_id)  # its heartbeats stop: it looks dead
    await Run.objects.filter(pk=trace.run_id).aupdate(heartbeat_at=timezone.now() - timedelta(seconds=30))
    await manager.tick()
    assert (await Run.objects.aget(pk=trace.run_id)).status == "interrupted"
    gate.set()  # the "dead" owner wakes up and finishes
    await handle.task
    run = await Run.objects.aget(pk=trace.run_id)
    msg = await Message.objects.aget(run=run, role="assistant")
    assert run.status == "interrupted" and msg.status == "interrupted" and msg.content == "before the stall "
    await ws.close()


async def test_text_is_flushed_every_window_and_is_always_a_prefix(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_FLUSH_INTERVAL = 0.25
    settings.CHAT_FLUSH_MAX_INTERVAL = 0.25  # a fixed window: the lag bound below holds for every flush
    settings.CHAT_COALESCE_WINDOW = 0.01
    steps: list[Any] = []
    for i in range(120):
        steps += [s.TextDelta(f"w{i} "), 0.01]
    scripted.enqueue(steps)
    ws, _ = await ws_connect(user)
    await ws.chat("stream slowly")
    trace = RunTrace()
    first = await ws.recv()
    trace.add(first)
    snapshots: list[tuple[float, str]] = []
    done = asyncio.Event()

    async def poll() -> None:
        while not done.is_set():
            content = await Message.objects.filter(run_id=first["run_id"], role="assistant").values_list("content", flat=True).afirst()
            snapshots.append((time.monotonic(), content or ""))
            await asyncio.sleep(0.03)

    poller = asyncio.create_task(poll())
    await follow(ws, trace)
    done.set()
    await poller
    trace.check()
    final = trace.text
    distinct = []
    for at, content in snapshots:
        assert final.startswith(content), "persisted text is not a prefix of the streamed text"
        must = trace.text_before(at - settings.CHAT_FLUSH_INTERVAL - 0.2)
        assert content.startswith(must), f"persisted text lags more than a flush window at {at}"
        if content and (not distinct or distinct[-1] != content):
            distinct.append(content)
    duration = trace.arrivals[-1] - trace.arrivals[0]
    assert len(distinct) >= 3, "text must be flushed while streaming"
    assert len(distinct) <= duration / settings.CHAT_FLUSH_INTERVAL + 3, "no more often than the flush window"
    FIGURES.trial("inprocess_flush_window")
    await ws.close()


async def test_graceful_shutdown_lets_a_run_finish(user: Any, scripted: Any) -> None:
    scripted.enqueue([s.TextDelta("almost "), 0.3, s.TextDelta("done")])
    ws, _ = await ws_connect(user)
    await ws.chat("finish me")
    trace = RunTrace()
    trace.add(await ws.recv())
    await manager.shutdown(timeout=5)
    await follow(ws, trace)
    trace.check()
    assert trace.terminal["type"] == "complete" and trace.text == "almost done"
    state = await sync_to_async(db_state_orm)()
    assert check_persisted_text(state, trace) == "completed"
    FIGURES.trial("inprocess_shutdown_finish")
    await ws.close()


async def test_graceful_shutdown_checkpoints_a_run_that_does_not_finish(user: Any, scripted: Any) -> None:
    never = asyncio.Event()
    scripted.enqueue([s.TextDelta("partial "), s.TextDelta("answer"), never], s.text("next turn"))
    ws, _ = await ws_connect(user)
    await ws.chat("hang")
    trace = RunTrace()
    while trace.text != "partial answer":
        trace.add(await ws.recv())
    await manager.shutdown(timeout=0.3)
    await follow(ws, trace)
    trace.check()
    assert trace.terminal["type"] == "error" and trace.terminal["code"] == "interrupted"
    state = await sync_to_async(db_state_orm)()
    assert check_persisted_text(state, trace) == "interrupted"
    assert state.assistant_of(trace.run_id)["content"] == "partial answer"  # nothing lost at a graceful stop
    await ws.chat("again", conversation_id=trace.terminal["conversation_id"])
    nxt = RunTrace()
    await follow(ws, nxt)
    assert nxt.terminal["type"] == "complete"
    assert_valid_history(scripted.requests[-1].messages)
    FIGURES.trial("inprocess_shutdown_checkpoint")
    await ws.close()


async def test_a_cancelled_caller_does_not_orphan_its_run(user: Any, scripted: Any, monkeypatch: Any) -> None:
    """The socket or SSE request goes away while the message is being stored: the run still starts."""
    scripted.enqueue(s.text("answered anyway"))
    original = admission._turn_start_db

    def slow(*args: Any) -> Any:
        time.sleep(0.3)
        return original(*args)

    monkeypatch.setattr(admission, "_turn_start_db", slow)
    frame = ChatSend(client_message_id="cm-orphan", message="hi")
    task = asyncio.create_task(services.turn_start(user=user, frame=frame))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.4)
    run = await Run.objects.aget(user_message__client_message_id="cm-orphan")
    for _ in range(250):  # it started (and, with a shared run log, its handle may already be let go once it ended)
        await run.arefresh_from_db()
        if run.status != Run.Status.RUNNING:
            break
        await asyncio.sleep(0.02)
    assert run.status == Run.Status.COMPLETED
    ws, _ = await ws_connect(user)
    await ws.chat("hi", client_message_id="cm-orphan")
    trace = RunTrace()
    await follow(ws, trace)
    trace.check()
    assert trace.terminal["type"] == "complete" and trace.text == "answered anyway"
    await ws.close()


@pytest.fixture
def charge_tool() -> Any:
    """A side-effecting global tool that blocks until released; counts its executions."""
    calls: list[dict[str, Any]] = []
    release = threading.Event()

    def charge(tool_input: dict[str, Any], ctx: Any) -> str:
        calls.append(tool_input)
        release.wait(10)
        return f"charged {tool_input.get('amount')}"

    spec = ToolSpec(name="charge_card", description="Charge the user's card (a side effect).",
                    input_schema={"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]},
                    executor=charge, is_global=True, side_effects=True)
    tool_registry.register(spec)
    yield calls, release
    release.set()
    tool_registry.unregister("charge_card")


async def test_a_side_effecting_tool_runs_at_most_once_across_resends_and_reconnects(
    user: Any, scripted: Any, charge_tool: Any
) -> None:
    calls, release = charge_tool
    scripted.enqueue(s.tool_call("charge_card", {"amount": 5}, tool_id="toolu_charge", before="Charging. "), s.text("Done."))
    cmid = str(uuid.uuid4())
    frame = {"type": "chat.send", "client_message_id": cmid, "conversation_id": None, "message": "charge me 5", "context": {}}
    ws, _ = await ws_connect(user)
    await ws.send(frame)
    trace = RunTrace()
    await follow(ws, trace, until="tool_start")
    for _ in range(3):  # the client loses the socket mid-tool and resends, as a reconnecting client does
        await ws.close()
        trace.reconnected()
        ws, _ = await ws_connect(user)
        await ws.send(frame)
        await ws.send({"type": "chat.resume", "run_id": trace.run_id, "after_seq": trace.last_seq})
        await asyncio.sleep(0.05)
    release.set()
    await follow(ws, trace)
    trace.check()
    await ws.close()
    ws, _ = await ws_connect(user)
    await ws.send(frame)  # once more after the end
    replay = RunTrace()
    await follow(ws, replay)
    assert [e["seq"] for e in replay.events] == [e["seq"] for e in trace.events]
    assert len(calls) == 1
    assert await ToolCall.objects.filter(name="charge_card").acount() == 1
    assert await Run.objects.acount() == 1
    state = await sync_to_async(db_state_orm)()
    check_db(state, acked=[(user.pk, cmid)])
    check_persisted_text(state, trace)
    FIGURES.trial("inprocess_side_effect_once")
    await ws.close()
