"""Bench scenario, a burst: 50 conversations send in the same instant; each one's first event, timed from that instant."""
from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.bench.client import Turn, integrity, latency, pct, read_run, send_frame, ws_open
from tests.bench.harness import CPU, PACED, VAR, Bench, app_env
from tests.bench.server import Server

BURST = 50  # conversations, each its own user (the per-user limits are not what is measured)


async def run(bench: Bench) -> None:
    """`BURST` sockets each send a paced 100-token turn at once, in rounds (the first round starts new conversations,
    the others go on with them), on daphne (the bench's app server) and on uvicorn. Every first event is timed from
    the instant of the burst, before the first frame is written: the client's own sending is in the figure."""
    out: dict[str, Any] = {"conversations": BURST, "message": PACED, "rounds": bench.p["burst_rounds"]}
    uvicorn = Server("burst_uvicorn", "tests.bench.asgi_counting:application", app_env(bench.db_url), VAR / "logs", server="uvicorn").start()
    bench.extra_servers = [uvicorn]
    try:
        for name, server in (("daphne", bench.servers["app"]), ("uvicorn", uvicorn)):
            out[name] = await burst_rounds(bench, server)
    finally:
        uvicorn.stop()
        bench.extra_servers = []
    bench.results["burst"] = out


async def burst_rounds(bench: Bench, server: Server) -> dict[str, Any]:
    socks = await asyncio.gather(*(ws_open(server.ws_url, bench.tokens[i]) for i in range(BURST)))
    conversations: list[int | None] = [None] * BURST
    turns: list[Turn] = []
    rounds: list[dict[str, Any]] = []
    cpu = CPU(server)
    t_all = time.perf_counter()
    for r in range(bench.p["burst_rounds"]):
        frames = [send_frame(PACED, conversations[i]) for i in range(BURST)]
        batch = [Turn() for _ in range(BURST)]
        t0 = time.perf_counter()  # the burst's instant: every turn's times count from here
        for ws, frame in zip(socks, frames, strict=True):
            await ws.send(frame)
        sent_ms = round((time.perf_counter() - t0) * 1000, 2)
        await asyncio.gather(*(read_run(ws, t0, t) for ws, t in zip(socks, batch, strict=True)))
        for i, t in enumerate(batch):
            conversations[i] = t.conversation_id
        turns += batch
        fe = [t.first_event for t in batch if t.first_event is not None]
        rounds.append({"new_conversations": r == 0, "first_event_p50_ms": round((pct(fe, 50) or 0) * 1000, 2),
                       "first_event_max_ms": round(max(fe, default=0) * 1000, 2), "client_send_ms": sent_ms})
        await asyncio.sleep(0.5)  # the answers are over: the next burst starts on a quiet server
    wall = time.perf_counter() - t_all
    used = cpu.used()[server.name]
    await asyncio.gather(*(ws.close() for ws in socks))
    return {**latency(turns), **integrity(turns), "per_round": rounds, "server_cpu_s": round(used, 3),
            "server_cpu_share": round(used / wall, 2)}
