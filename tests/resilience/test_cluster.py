"""Scale-out battery against real services: two (and more) daphne processes, PostgreSQL, a redis-server of
its own, the fake Anthropic server as a separate process. No sticky sessions: every connection picks a
process at random. Faults: random disconnects, SIGKILL of the owning process, Redis restart, SIGTERM,
provider faults, fuzzed frames. Each trial is checked against tests/resilience/invariants.py."""
from __future__ import annotations

import asyncio
import json
import random
import signal
import time
import uuid
from typing import Any

import pytest
import websockets

from tests.fakes.anthropic_server import error_mid_stream, overloaded, rate_limited, stall, text_response, tool_use_response
from tests.protocol import check_wire
from tests.resilience.cluster import Cluster
from tests.resilience.invariants import (
    FIGURES,
    InvariantError,
    RunTrace,
    assert_no_foreign_bytes,
    assert_valid_history,
    check_db,
    check_persisted_text,
    db_state_sql,
)

pytestmark = pytest.mark.services
PROCS = ("A", "B")


@pytest.fixture(scope="module")
def cluster() -> Any:
    c = Cluster()
    try:
        c.start()
        for name in PROCS:
            c.start_daphne(name)
        yield c
    except BaseException:
        for name in c.procs:
            print(f"---- {name} ----\n{c.log_tail(name)}")
        raise
    finally:
        c.close()


class Client:
    """A protocol v1 client that reconnects to any process and resumes with after_seq."""

    def __init__(self, cluster: Cluster, user: str, rng: random.Random):
        self.c, self.user, self.rng = cluster, user, rng
        self.ws: Any = None
        self.log: list[str] = []

    async def connect(self, proc: str | None = None) -> str:
        proc = proc or self.rng.choice(PROCS)
        if self.ws is not None:
            await self.ws.close()
        self.ws = await self.c.ws(proc, self.user)
        return proc

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(frame))

    async def recv(self, timeout: float = 20) -> dict[str, Any]:
        raw = await asyncio.wait_for(self.ws.recv(), timeout)
        self.log.append(raw if isinstance(raw, str) else raw.decode())
        return check_wire(raw)

    async def read_into(self, trace: RunTrace, budget: int, timeout: float = 20) -> None:
        for _ in range(budget):
            if trace.done or trace.resynced:
                return
            ev = await self.recv(timeout)
            if "seq" not in ev:
                if ev.get("code") == "resync":
                    trace.resynced = True
                    FIGURES.add(resyncs=1)
                    return
                raise InvariantError(f"unexpected frame error {ev}")
            if ev.get("run_id") != trace.run_id and trace.run_id is not None:
                continue  # another run's event (earlier followers of this socket are gone with it)
            if ev["seq"] <= trace.last_seq and trace.events and trace.run_id is not None and trace.last_seq and ev["type"] == "status":
                raise InvariantError(f"replayed from the start after a resume: {ev}")
            trace.add(ev)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None

    async def turn(self, message: str, conversation_id: int | None, *, sse_share: float = 0.25) -> tuple[RunTrace, str]:
        """One message, followed to its end through random processes, cut at random points."""
        trace = RunTrace()
        cmid = str(uuid.uuid4())
        frame = {"type": "chat.send", "client_message_id": cmid, "conversation_id": conversation_id, "message": message, "context": {}}
        await self.connect()
        await self.send(frame)
        while True:
            await self.read_into(trace, self.rng.choice([0, 1, 2, 3, 5, 8, 13, 1000]))
            if trace.done or trace.resynced:
                break
            trace.reconnected()
            await asyncio.sleep(self.rng.choice([0, 0.005, 0.02, 0.05]))
            if trace.run_id is not None and self.rng.random() < sse_share:
                await self.close()
                proc = self.rng.choice(PROCS)
                events = await self.c.sse(proc, f"/api/chat/runs/{trace.run_id}/events", self.user,
                                          last_event_id=f"{trace.run_id}:{trace.last_seq}", budget=self.rng.choice([1, 3, 10**9]))
                for ident, ev in events:
                    if "seq" not in ev:
                        if ev.get("code") == "resync":
                            trace.resynced = True
                            FIGURES.add(resyncs=1)
                        else:
                            raise InvariantError(f"unexpected SSE error {ev}")
                    else:
                        if ident != f"{ev['run_id']}:{ev['seq']}":
                            raise InvariantError(f"SSE id {ident} for seq {ev['seq']}")
                        trace.add(ev)
                if trace.done or trace.resynced:
                    break
                trace.reconnected()
                await self.connect()
            else:
                await self.connect()
            if trace.run_id is None:
                await self.send(frame)  # never acknowledged: resend (idempotent on client_message_id)
            else:
                await self.send({"type": "chat.resume", "run_id": trace.run_id, "after_seq": trace.last_seq})
        await self.close()
        return trace, cmid


def _check_all(cluster: Cluster, traces: list[tuple[RunTrace, dict[str, Any]]], acked: list[tuple[int, str]]) -> None:
    state = db_state_sql(cluster.dsn)
    check_db(state, acked=acked)
    for trace, opts in traces:
        check_persisted_text(state, trace, **opts)


async def test_random_disconnects_across_processes(cluster: Cluster, seed: int) -> None:
    rng = random.Random(seed)
    traces: list[tuple[RunTrace, dict[str, Any]]] = []
    acked: list[tuple[int, str]] = []

    async def client_loop(index: int, user: str, trials: int) -> None:
        client = Client(cluster, user, random.Random(rng.random()))
        conversation_id = None
        for trial in range(trials):
            trace, cmid = await client.turn(f"client {index} question {trial}", conversation_id if client.rng.random() < 0.8 else None)
            FIGURES.trial("cluster_random_disconnect")
            trace.check()
            acked.append((cluster.user_ids[user], cmid))
            traces.append((trace, {}))
            if trace.terminal:
                assert trace.terminal["type"] == "complete", trace.terminal
                conversation_id = trace.terminal["conversation_id"]

    started = time.monotonic()
    await asyncio.gather(*(client_loop(i, ("ann", "bob")[i % 2], 30) for i in range(4)))
    _check_all(cluster, traces, acked)
    print(f"cluster random disconnects: {len(traces)} runs in {time.monotonic() - started:.1f} s, "
          f"{sum(t.connections - 1 for t, _ in traces)} reconnects, {sum(len(t.events) for t, _ in traces)} events")
    assert sum(t.resynced for t, _ in traces) == 0, "nothing should fall out of the retention window here"


async def test_run_started_on_a_is_followed_and_cancelled_through_b(cluster: Cluster) -> None:
    for how in ("ws", "http"):
        cluster.fake_enqueue(text_response(*[f"slow{i} " for i in range(200)], pace=0.02))
        a = Client(cluster, "ann", random.Random(1))
        await a.connect("A")
        cmid = str(uuid.uuid4())
        await a.send({"type": "chat.send", "client_message_id": cmid, "conversation_id": None, "message": f"cancel me {how}"})
        trace_a = RunTrace()
        await a.read_into(trace_a, 6)
        b = Client(cluster, "ann", random.Random(2))
        await b.connect("B")
        await b.send({"type": "chat.resume", "run_id": trace_a.run_id, "after_seq": 0})
        trace_b = RunTrace()
        await b.read_into(trace_b, 3)
        if how == "ws":
            c = Client(cluster, "ann", random.Random(3))
            await c.connect("B")
            await c.send({"type": "chat.cancel", "run_id": trace_a.run_id})
            await c.close()
        else:
            status, _ = await cluster.http("B", "POST", f"/api/chat/runs/{trace_a.run_id}/cancel")
            assert status == 202
        t0 = time.monotonic()
        await a.read_into(trace_a, 10**6, timeout=10)
        await b.read_into(trace_b, 10**6, timeout=10)
        assert time.monotonic() - t0 < 5
        for trace in (trace_a, trace_b):
            trace.check()
            assert trace.terminal["type"] == "cancelled"
        assert trace_a.events == trace_b.events
        _check_all(cluster, [(trace_a, {})], [(cluster.user_ids["ann"], cmid)])
        FIGURES.trial(f"cluster_cancel_via_other_{how}")
        await a.close()
        await b.close()


async def test_a_frontend_tool_call_on_a_is_answered_through_b(cluster: Cluster) -> None:
    """The tab's answer reaches the run's owner from another process (the doorbell, else the heartbeat's poll); the
    run goes on to its one answer and the tab's result is what the model read."""
    tool = {"name": "switch_tab", "title": "Switch tab", "description": "Switch the page's tab.",
            "parameters": {"type": "object", "properties": {"tab": {"type": "string"}}, "required": ["tab"]}}
    for how in ("ws", "http"):
        cluster.fake_enqueue(tool_use_response("switch_tab", {"tab": "presentation"}, tool_id=f"toolu_tab_{how}"),
                             text_response("Switched ", "over there."))
        a = Client(cluster, "ann", random.Random(1))
        await a.connect("A")
        cmid = str(uuid.uuid4())
        await a.send({"type": "chat.send", "client_message_id": cmid, "message": f"switch tab {how}", "tab_id": "tab-a",
                      "client_tools": [tool], "state": {"tab": "overview"}})
        trace = RunTrace()
        while not (trace.events and trace.events[-1]["type"] == "client_tool_call"):
            trace.add(await a.recv())
        call = trace.events[-1]
        assert call["tab_id"] == "tab-a" and call["input"] == {"tab": "presentation"}
        answer = {"tool_use_id": call["tool_use_id"], "tab_id": "tab-a", "output": f"switched via {how}", "state": {"tab": "presentation"}}
        if how == "ws":
            b = Client(cluster, "ann", random.Random(2))
            await b.connect("B")
            await b.send({"type": "chat.tool_result", "run_id": call["run_id"], **answer})
            await b.close()
        else:
            status, body = await cluster.http("B", "POST", f"/api/chat/runs/{call['run_id']}/tool_result", body=answer)
            assert status == 202, body
        await a.read_into(trace, 10**6, timeout=15)
        trace.check()
        assert trace.terminal is not None and trace.terminal["type"] == "complete"
        assert [e["type"] for e in trace.events].count("state") == 1
        history = trace.terminal["payload"]["tool_history"]
        assert history[0]["tool_name"] == "switch_tab" and history[0]["output"] == f"switched via {how}"
        _check_all(cluster, [(trace, {})], [(cluster.user_ids["ann"], cmid)])
        FIGURES.trial(f"cluster_frontend_tool_via_other_{how}")
        await a.close()



async def test_killed_owner_is_detected_and_the_conversation_goes_on(cluster: Cluster, seed: int) -> None:
    rng = random.Random(seed + 7)
    for trial in range(3):
        name = f"K{trial}"
        cluster.start_daphne(name)
        cluster.fake_enqueue(text_response(*[f"k{trial}w{i} " for i in range(300)], pace=0.01))
        owner = Client(cluster, "ann", rng)
        await owner.connect(name)
        cmid = str(uuid.uuid4())
        await owner.send({"type": "chat.send", "client_message_id": cmid, "conversation_id": None, "message": f"kill {trial}"})
        trace_owner = RunTrace()
        await owner.read_into(trace_owner, 1)
        follower = Client(cluster, "ann", rng)
        await follower.connect("B")
        await follower.send({"type": "chat.resume", "run_id": trace_owner.run_id, "after_seq": 0})
        trace = RunTrace()
        reader = asyncio.create_task(follower.read_into(trace, 10**6, timeout=30))
        await asyncio.sleep(rng.uniform(0.3, 2.0))
        killed_at = time.monotonic()
        cluster.kill(name, signal.SIGKILL)
        await reader
        detected = time.monotonic() - killed_at
        trace.check()
        assert trace.terminal["type"] == "error" and trace.terminal["code"] == "interrupted", trace.terminal
        assert detected < 10, f"interruption seen {detected:.1f} s after the kill"
        _check_all(cluster, [(trace, {"killed_at": killed_at, "window": 0.25, "slack": 0.5})], [(cluster.user_ids["ann"], cmid)])
        # the next message in that conversation, through another process, gets a valid history
        nxt, cmid2 = await follower.turn("after the crash", trace.terminal["conversation_id"], sse_share=0)
        nxt.check()
        assert nxt.terminal["type"] == "complete"
        assert_valid_history(cluster.fake_requests()[-1]["body"]["messages"])
        _check_all(cluster, [(nxt, {})], [(cluster.user_ids["ann"], cmid2)])
        FIGURES.trial("cluster_sigkill_owner")
        FIGURES.notes.append(f"SIGKILL trial {trial}: interrupted seen after {detected:.2f} s; streamed {len(trace.text)} chars")
        print(f"kill trial {trial}: interrupted seen on B {detected:.2f} s after SIGKILL")
        await owner.close()
        await follower.close()


async def test_redis_restart_mid_runs(cluster: Cluster, seed: int) -> None:
    rng = random.Random(seed + 11)
    n = 4
    cluster.fake_enqueue(*[text_response(*[f"r{j}w{i} " for i in range(150)], pace=0.02) for j in range(n)])
    owners, traces, followers, cmids = [], [], [], []
    for j in range(n):
        owner = Client(cluster, "ann", rng)
        await owner.connect("A")
        cmid = str(uuid.uuid4())
        await owner.send({"type": "chat.send", "client_message_id": cmid, "conversation_id": None, "message": f"redis {j}"})
        t = RunTrace()
        await owner.read_into(t, 1)
        owners.append(owner)
        cmids.append((cluster.user_ids["ann"], cmid))
        follower = Client(cluster, "ann", rng)
        await follower.connect("B")
        await follower.send({"type": "chat.resume", "run_id": t.run_id, "after_seq": 0})
        trace = RunTrace()
        followers.append(asyncio.create_task(follower.read_into(trace, 10**6, timeout=40)))
        traces.append(trace)
    await asyncio.sleep(0.7)
    cluster.kill_redis()
    await asyncio.sleep(1.0)
    cluster.start_redis()
    await asyncio.gather(*followers)
    for trace in traces:
        trace.check()
        assert trace.resynced or trace.terminal["type"] == "complete", trace.terminal
    _check_all(cluster, [(t, {}) for t in traces], cmids)
    # and after the restart everything works as before
    c = Client(cluster, "bob", rng)
    after, cmid = await c.turn("after the redis restart", None, sse_share=0.5)
    after.check()
    assert after.terminal["type"] == "complete"
    FIGURES.trial("cluster_redis_restart", n)
    FIGURES.notes.append(f"redis restart: {sum(t.resynced for t in traces)} of {n} followers resynced, the rest followed through")
    for owner in owners:
        await owner.close()


async def test_sigterm_lets_runs_finish_or_checkpoints_them(cluster: Cluster) -> None:
    for name, chunks, shutdown_timeout, expect in (("T1", 60, "8", "complete"), ("T2", 400, "1", "interrupted")):
        cluster.start_daphne(name, CHAT_SHUTDOWN_TIMEOUT=shutdown_timeout)
        cluster.fake_enqueue(text_response(*[f"{name}w{i} " for i in range(chunks)], pace=0.02))
        owner = Client(cluster, "ann", random.Random(5))
        await owner.connect(name)
        cmid = str(uuid.uuid4())
        await owner.send({"type": "chat.send", "client_message_id": cmid, "conversation_id": None, "message": f"sigterm {name}"})
        first = RunTrace()
        await owner.read_into(first, 1)
        follower = Client(cluster, "ann", random.Random(6))
        await follower.connect("B")
        await follower.send({"type": "chat.resume", "run_id": first.run_id, "after_seq": 0})
        trace = RunTrace()
        reader = asyncio.create_task(follower.read_into(trace, 10**6, timeout=30))
        await asyncio.sleep(0.3)
        cluster.kill(name, signal.SIGTERM)
        await reader
        trace.check()
        if expect == "complete":
            assert trace.terminal["type"] == "complete"
        else:
            assert trace.terminal["type"] == "error" and trace.terminal["code"] == "interrupted"
        cluster.procs[name].wait(20)  # it does stop by itself
        state = db_state_sql(cluster.dsn)
        status = check_persisted_text(state, trace)
        if expect == "interrupted":
            assert state.assistant_of(trace.run_id)["content"] == trace.text  # checkpointed: nothing lost
        assert status == ("completed" if expect == "complete" else "interrupted")
        FIGURES.trial(f"cluster_sigterm_{expect}")
        await owner.close()
        await follower.close()


async def test_provider_faults_across_processes(cluster: Cluster) -> None:
    faults = [
        ([rate_limited("0.01"), text_response("after ", "429")], "complete"),
        ([overloaded("0.01"), text_response("after ", "529")], "complete"),
        ([error_mid_stream("cut ", "short")], "error"),
        ([stall("stalled ", "here")], "error"),
    ]
    client = Client(cluster, "bob", random.Random(9))
    conversation_id = None
    for scenarios, expect in faults:
        cluster.fake_enqueue(*scenarios)
        trace, cmid = await client.turn("fault", conversation_id, sse_share=0.3)
        trace.check()
        assert trace.terminal["type"] == expect, trace.terminal
        _check_all(cluster, [(trace, {})], [(cluster.user_ids["bob"], cmid)])
        conversation_id = trace.terminal["conversation_id"]
        FIGURES.trial("cluster_provider_fault")
    for request in cluster.fake_requests():
        assert_valid_history(request["body"]["messages"])


async def test_fuzzed_frames_against_real_daphne(cluster: Cluster, seed: int) -> None:
    """Random frames (text and binary, malformed, huge, nested) never take a process down or touch others."""
    rng = random.Random(seed + 3)
    pieces = ['{"type":"chat.send"', '"client_message_id":', '"conversation_id":', '99999999999999999999999', '"\\ud800"',
              '"\\u0000"', "[", "]", "{", "}", ",", ":", "null", '"chat.resume"', '"after_seq":-1', '"run_id":"../../etc"',
              '"type":"session.logout"', '"type":"run.cancel"', "\u0000", "\udfff".encode("utf-8", "surrogatepass").decode("utf-8", "replace")]
    bob = Client(cluster, "bob", rng)
    await bob.connect("B")
    ann = Client(cluster, "ann", rng)
    await ann.connect("A")
    before = len(db_state_sql(cluster.dsn).messages)
    sent = 0
    for i in range(300):
        kind = rng.random()
        if kind < 0.1:
            payload: Any = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))
        elif kind < 0.15:
            payload = '{"type":"chat.send","client_message_id":"big","message":"' + "x" * rng.choice([70_000, 900_000]) + '"}'
        elif kind < 0.2:
            depth = rng.randint(30, 5000)
            payload = '{"type":"chat.send","client_message_id":"d","message":"x","context":' + '{"a":' * depth + "1" + "}" * depth + "}"
        else:
            payload = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        try:
            await ann.ws.send(payload)
        except websockets.ConnectionClosed:
            pass  # a huge frame: the server closed while it was still being written; its too_large is read below
        sent += 1
        reply = await ann.recv(10)
        assert reply["type"] == "error" and "seq" not in reply and reply["code"] != "internal", (payload[:200], reply)
        if len(payload) > 64 * 1024:  # over CHAT_MAX_FRAME_BYTES: too_large, then the server closes with 1009
            assert reply["code"] == "too_large", reply
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ann.ws.recv(), 10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
            await ann.connect("A")
    assert len(db_state_sql(cluster.dsn).messages) == before
    # both processes still serve, and bob never saw any of it
    await bob.send({"type": "chat.resume", "run_id": str(uuid.uuid4()), "after_seq": 0})
    assert (await bob.recv())["code"] == "not_found"
    trace, _ = await ann.turn("still alive?", None, sse_share=0)
    assert trace.terminal["type"] == "complete"
    assert cluster.alive("A") and cluster.alive("B")
    assert_no_foreign_bytes(bob.log, ['"client_message_id":"big"', "chat.resume"])
    FIGURES.trial("cluster_fuzz_frames", sent)
    await bob.close()
