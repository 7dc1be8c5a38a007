"""Resume in one process (in-memory run log): random disconnects over websocket and SSE, resync outside
the retained window, idempotent resends. Every trial is checked against tests/resilience/invariants.py."""
from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.test import AsyncClient

from chat.providers import scripted as s
from chat.runs import manager
from tests.conftest import WS, token_for, ws_connect
from tests.protocol import check_wire
from tests.resilience.invariants import FIGURES, InvariantError, RunTrace, check_db, check_persisted_text, db_state_orm

pytestmark = pytest.mark.django_db(transaction=True)


def script_for(rng: random.Random, trial: int) -> list[Any]:
    """A model answer of random length and pace; sometimes a real tool round trip first."""
    scripts: list[Any] = []
    if rng.random() < 0.3:
        scripts.append(s.tool_call("calculate", {"expression": f"{trial} * 7"}, tool_id=f"toolu_t{trial}", before=f"Computing {trial}. "))
    steps: list[Any] = []
    for i in range(rng.randint(3, 30)):
        steps.append(s.TextDelta(f"t{trial}w{i} "))
        steps.append(rng.choice([0, 0, 0.001, 0.004]))
    scripts.append(steps)
    return scripts


async def read_some(ws: WS, trace: RunTrace, budget: int, timeout: float = 5) -> None:
    """Read up to `budget` frames into the trace (stopping at the terminal); frame-level errors are problems."""
    for _ in range(budget):
        if trace.done:
            return
        try:
            ev = await ws.recv(timeout)
        except TimeoutError:
            raise InvariantError(f"no event within {timeout} s; run {trace.run_id} had seqs up to {trace.last_seq}: "
                                 f"{[e['type'] for e in trace.events]}") from None
        if "seq" not in ev:
            if ev.get("code") == "resync":
                trace.resynced = True
                FIGURES.add(resyncs=1)
                return
            raise InvariantError(f"unexpected frame error {ev}")
        trace.add(ev)


async def run_with_random_disconnects(user: Any, rng: random.Random, message: str, conversation_id: int | None) -> tuple[RunTrace, str]:
    """Send a message and follow its run to the end, dropping the socket at random points and resuming."""
    trace = RunTrace()
    cmid = str(uuid.uuid4())
    frame = {"type": "chat.send", "client_message_id": cmid, "conversation_id": conversation_id, "message": message, "context": {}}
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.send(frame)
    while not trace.done and not trace.resynced:
        await read_some(ws, trace, rng.choice([0, 1, 2, 3, 5, 8, 13, 1000]))
        if trace.done or trace.resynced:
            break
        await ws.close()
        trace.reconnected()
        await asyncio.sleep(rng.choice([0, 0, 0.001, 0.005, 0.02]))
        ws, _ = await ws_connect(user)
        assert ws is not None
        if trace.run_id is None:
            await ws.send(frame)  # the ack never arrived: resend; the same client_message_id starts nothing new
        else:
            await ws.send({"type": "chat.resume", "run_id": trace.run_id, "after_seq": trace.last_seq})
    await ws.close()
    return trace, cmid


async def test_random_disconnects_resume_gapless_in_memory(user: Any, scripted: Any, settings: Any, seed: int) -> None:
    settings.CHAT_COALESCE_WINDOW = 0.002
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 10_000
    rng = random.Random(seed)
    traces: list[RunTrace] = []
    acked: list[tuple[int, str]] = []
    conversation_id = None
    for trial in range(60):
        scripted.enqueue(*script_for(rng, trial))
        trace, cmid = await run_with_random_disconnects(user, rng, f"question {trial}", conversation_id if rng.random() < 0.8 else None)
        FIGURES.trial("inprocess_ws_disconnect")
        trace.check()
        acked.append((user.pk, cmid))
        assert trace.terminal and trace.terminal["type"] == "complete", trace.terminal
        conversation_id = trace.terminal["conversation_id"]
        traces.append(trace)
    assert sum(t.connections - 1 for t in traces) > 60  # the trials really reconnected
    state = await sync_to_async(db_state_orm)()
    check_db(state, acked=acked)
    for trace in traces:
        check_persisted_text(state, trace)


def parse_sse(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    out = []
    for block in raw.decode().split("\n\n"):
        ident, data = None, None
        for line in block.splitlines():
            if line.startswith("id: "):
                ident = line[4:]
            elif line.startswith("data: "):
                data = check_wire(line[6:])
        if data is not None:
            out.append((ident, data))
    return out


async def test_random_sse_cuts_resume_with_last_event_id(user: Any, scripted: Any, settings: Any, seed: int) -> None:
    settings.CHAT_COALESCE_WINDOW = 0.002
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 10_000
    rng = random.Random(seed + 1)
    token = await database_sync_to_async(token_for)(user)
    headers = {"Authorization": f"Token {token}"}
    client = AsyncClient()
    traces, acked = [], []
    for trial in range(20):
        scripted.enqueue(*script_for(rng, trial))
        cmid = str(uuid.uuid4())
        response = await client.post("/api/chat/stream", {"client_message_id": cmid, "message": f"sse {trial}"},
                                     content_type="application/json", headers=headers)
        assert response.status_code == 200
        trace = RunTrace()
        while True:
            it = response.streaming_content.__aiter__()
            budget = rng.choice([1, 2, 4, 1000])
            buf = b""
            try:
                while budget:
                    buf += await asyncio.wait_for(it.__anext__(), 5)
                    for ident, ev in parse_sse(buf):
                        pass
                    if buf.endswith(b"\n\n"):
                        budget -= 1
            except StopAsyncIteration:
                pass
            for ident, ev in parse_sse(buf):
                if "seq" in ev:
                    assert ident == f"{ev['run_id']}:{ev['seq']}"
                    trace.add(ev)
                else:
                    trace.problems.append(f"frame error {ev}")
            await it.aclose()  # the client goes away mid-stream (the run belongs to the process)
            if trace.done:
                break
            trace.reconnected()
            assert trace.run_id is not None
            response = await client.get(f"/api/chat/runs/{trace.run_id}/events",
                                        headers={**headers, "Last-Event-ID": f"{trace.run_id}:{trace.last_seq}"})
            assert response.status_code == 200
        FIGURES.trial("inprocess_sse_cut")
        trace.check()
        acked.append((user.pk, cmid))
        traces.append(trace)
    state = await sync_to_async(db_state_orm)()
    check_db(state, acked=acked)
    for trace in traces:
        check_persisted_text(state, trace)


async def test_outside_the_retained_window_the_client_is_told_to_resync(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_RUN_LOG_TTL = 0.2  # seconds a finished run stays replayable from memory
    scripted.enqueue(s.text("kept ", "in ", "the ", "database"))
    ws, _ = await ws_connect(user)
    await ws.chat("hello")
    trace = RunTrace()
    for ev in await ws.until_terminal():
        trace.add(ev)
    trace.check()
    await asyncio.sleep(0.4)
    assert manager.local(trace.run_id) is None  # out of the window
    if settings.REDIS_URL:  # the Redis Stream's own TTL (here: its expiry, simulated)
        import redis.asyncio as aioredis

        r = aioredis.from_url(settings.REDIS_URL)
        await r.delete(f"{settings.CHAT_REDIS_KEY_PREFIX}run:{trace.run_id}")
        await r.aclose()
    await ws.send({"type": "chat.resume", "run_id": trace.run_id, "after_seq": 2})
    resync = await ws.recv()
    assert resync["type"] == "error" and resync["code"] == "resync" and "seq" not in resync
    # a fresh follower (after_seq 0) gets the terminal event rebuilt from the database
    await ws.send({"type": "chat.resume", "run_id": trace.run_id, "after_seq": 0})
    replay = await ws.recv()
    assert replay["type"] == "complete" and replay["seq"] == trace.last_seq
    assert replay["payload"]["message"] == trace.text
    # ... and the conversation over REST holds exactly the streamed text
    client = AsyncClient()
    token = await database_sync_to_async(token_for)(user)
    detail = (await client.get(f"/api/conversations/{trace.terminal['conversation_id']}/", headers={"Authorization": f"Token {token}"})).json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    assert detail["messages"][1]["content"] == trace.text == "kept in the database"
    # SSE says the same with Last-Event-ID
    r = await client.get(f"/api/chat/runs/{trace.run_id}/events", headers={"Authorization": f"Token {token}", "Last-Event-ID": f"{trace.run_id}:1"})
    events = parse_sse(b"".join([c async for c in r.streaming_content]))
    assert [e["code"] for _, e in events] == ["resync"]
    # ... and a client that already has the terminal event is told there is nothing more (204: EventSource stops)
    r = await client.get(f"/api/chat/runs/{trace.run_id}/events",
                         headers={"Authorization": f"Token {token}", "Last-Event-ID": f"{trace.run_id}:{trace.last_seq}"})
    assert r.status_code == 204
    FIGURES.trial("inprocess_resync")
    await ws.close()


async def test_resume_past_the_end_is_a_resync_not_a_hang(user: Any, scripted: Any) -> None:
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("a"), gate])
    ws, _ = await ws_connect(user)
    await ws.chat("go")
    first = await ws.recv()
    for bogus in (10**6, 2**70):
        await ws.send({"type": "chat.resume", "run_id": first["run_id"], "after_seq": bogus})
        while (ev := await ws.recv())["type"] != "error" or "seq" in ev:
            pass
        assert ev["code"] == "resync"
    gate.set()
    await ws.send({"type": "chat.resume", "run_id": first["run_id"], "after_seq": 1})
    trace = RunTrace()
    trace.add(first)
    while not trace.done:
        ev = await ws.recv()
        if ev.get("seq", 0) > trace.last_seq:
            trace.add(ev)
    trace.check()
    await ws.close()


async def test_resend_of_an_acknowledged_message_is_never_rate_limited(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1
    scripted.enqueue(s.text("once"))
    ws, _ = await ws_connect(user)
    cmid = await ws.chat("hello")
    events = await ws.until_terminal()
    for _ in range(3):  # reconnecting clients resend what they did not see acknowledged
        await ws.chat("hello", client_message_id=cmid)
        assert await ws.until_terminal() == events
    await ws.chat("a new message")
    refused = await ws.recv()
    assert refused["type"] == "error" and refused["code"] == "rate_limited" and "seq" not in refused
    await ws.close()
