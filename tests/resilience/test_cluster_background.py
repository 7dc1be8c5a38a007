"""The process-wide background work of a scale-out deployment, seen from outside: two daphne processes on
PostgreSQL and a redis-server of their own, JSON logs at INFO, read as an operator's log pipeline reads them.

- A process whose first request is a REST turn (`POST <api>chat`, a sync view that runs the turn through
  async_to_sync) keeps its heartbeat: a later long run there streams past the stale timeout, its `heartbeat_at`
  advances, and the other process does not end it as interrupted.
- A quiet healthy cluster logs nothing above INFO and no traceback: six turns, then ~20 s of idle sockets (the
  channel layer's receives end on their timeouts every few seconds, which is normal)."""
from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from datetime import datetime
from typing import Any

import pytest

from tests.fakes.anthropic_server import text_response
from tests.protocol import check_http, check_wire
from tests.resilience.cluster import Cluster
from tests.resilience.server_logs import read_json_log

pytestmark = pytest.mark.services
TERMINAL = {"complete", "error", "cancelled"}
STALE_AFTER = 2.5  # Cluster.env's CHAT_STALE_AFTER (CHAT_HEARTBEAT_INTERVAL 0.5)


@pytest.fixture(scope="module")
def cluster() -> Any:
    """PostgreSQL, Redis and the fake model; each test starts its own daphne processes (their first request is its)."""
    c = Cluster(daphne_env={"LOG_FORMAT": "json", "LOG_LEVEL": "INFO"})
    try:
        c.start()
        yield c
    except BaseException:
        for name in c.procs:
            print(f"---- {name} ----\n{c.log_tail(name)}")
        raise
    finally:
        c.close()


def _log(cluster: Cluster, name: str) -> str:
    return (cluster.tmp / f"{name}.log").read_text(errors="replace")


def _rest_turn(cluster: Cluster, name: str, body: dict[str, Any], timeout: float = 60) -> tuple[int, dict[str, Any]]:
    """POST /api/chat (answered when the turn ends), checked against the published schema."""
    req = urllib.request.Request(f"http://127.0.0.1:{cluster.ports[name]}/api/chat", data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Token {cluster.tokens['ann']}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    return status, check_http(status, raw)


def _sse_turn(cluster: Cluster, name: str, message: str) -> list[dict[str, Any]]:
    """POST /api/chat/stream: the turn's events."""
    body = {"client_message_id": str(uuid.uuid4()), "conversation_id": None, "message": message, "context": {}}
    req = urllib.request.Request(f"http://127.0.0.1:{cluster.ports[name]}/api/chat/stream", data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Token {cluster.tokens['ann']}", "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        raw = r.read().decode()
    return [check_wire(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]


async def _ws_turn(ws: Any, message: str) -> dict[str, Any]:
    """One chat.send on an open socket: its terminal event."""
    await ws.send(json.dumps({"type": "chat.send", "client_message_id": str(uuid.uuid4()), "conversation_id": None,
                              "message": message, "context": {}}))
    async with asyncio.timeout(30):
        while True:
            ev = check_wire(await ws.recv())
            if ev.get("type") in TERMINAL:
                return ev


def _runs(cluster: Cluster) -> dict[str, tuple[str, datetime | None]]:
    """run id -> (status, heartbeat_at), straight from PostgreSQL."""
    import psycopg

    with psycopg.connect(cluster.dsn) as conn:
        return {rid: (status, beat) for rid, status, beat in conn.execute("SELECT id::text, status, heartbeat_at FROM pagechat_run")}


async def test_a_long_run_on_a_process_whose_first_request_was_rest_keeps_its_heartbeat(cluster: Cluster) -> None:
    a, b = "rest-a", "rest-b"
    for name in (a, b):
        cluster.start_daphne(name)
    try:
        ws_b = await cluster.ws(b)  # B is serving (its heartbeat, and with it its stale-run sweep, is running)
        # A's very first request: a REST turn, short (the fake answers the title call that follows apart)
        status, first = await asyncio.to_thread(_rest_turn, cluster, a, {"client_message_id": str(uuid.uuid4()), "message": "first"})
        assert status == 200, first

        # Then a long run on A, REST again: its request has answered, the process serves on
        chunks = [f"long{i} " for i in range(120)]
        cluster.fake_enqueue(text_response(*chunks, pace=0.05))  # ~6 s: more than twice CHAT_STALE_AFTER
        known = set(_runs(cluster))
        turn = asyncio.create_task(asyncio.to_thread(_rest_turn, cluster, a, {
            "client_message_id": str(uuid.uuid4()), "conversation_id": first["conversation_id"], "message": "a long one"}))
        run_id = None
        async with asyncio.timeout(10):
            while run_id is None:
                run_id = next(iter(set(_runs(cluster)) - known), None)
                await asyncio.sleep(0.05)
        # B follows it (a follower there settles a silent run against its heartbeat, as the sweep does)
        follower = asyncio.create_task(cluster.sse(b, f"/api/chat/runs/{run_id}/events", timeout=30))
        beats: list[datetime] = []
        while not turn.done():
            state, beat = _runs(cluster)[run_id]
            if state == "running" and beat is not None:
                beats.append(beat)
            await asyncio.sleep(0.2)
        status, body = await turn
        followed = await follower
        await ws_b.close()
    finally:
        for name in (a, b):
            cluster.kill(name)

    assert status == 200 and body["message"] == "".join(chunks), body
    assert _runs(cluster)[run_id][0] == "completed"
    assert followed and followed[-1][1]["type"] == "complete", followed[-1:]  # B saw it end as it did, not interrupted
    span = (max(beats) - min(beats)).total_seconds()
    assert len(set(beats)) >= 4 and span >= STALE_AFTER, f"heartbeat_at moved {span:.2f} s over {len(set(beats))} values"
    for name in (a, b):
        log = _log(cluster, name)
        assert "heartbeat failed" not in log, log[-3000:]
        assert read_json_log(log).problems == [], read_json_log(log).problems[:5]


async def test_a_quiet_healthy_cluster_logs_nothing_above_info(cluster: Cluster) -> None:
    a, b = "quiet-a", "quiet-b"
    for name in (a, b):
        cluster.start_daphne(name)
    try:
        sockets = {name: await cluster.ws(name) for name in (a, b)}
        # six turns over every transport, on both processes
        for name in (a, b, a, b):
            assert (await _ws_turn(sockets[name], f"over the socket of {name}"))["type"] == "complete"
        status, body = await asyncio.to_thread(_rest_turn, cluster, a, {"client_message_id": str(uuid.uuid4()), "message": "rest"})
        assert status == 200, body
        events = await asyncio.to_thread(_sse_turn, cluster, b, "stream")
        assert events[-1]["type"] == "complete", events[-1]
        # quiet: the sockets stay open, nothing happens; each process's receives wait on Redis and time out
        await asyncio.sleep(20)
        for ws in sockets.values():  # both sockets are still served
            await asyncio.wait_for(await ws.ping(), 5)
            await ws.close()
    finally:
        for name in (a, b):
            cluster.kill(name)

    for name in (a, b):
        report = read_json_log(_log(cluster, name))
        assert report.problems == [], f"{name} logged {len(report.problems)} lines above INFO or tracebacks: {report.problems[:5]}"
        assert len([m for m in report.messages("INFO") if m == "run finished"]) == 3  # the log was read: its turns are there
