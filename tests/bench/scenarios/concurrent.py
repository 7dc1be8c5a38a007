"""Bench scenario 3, concurrent conversations: conversations with think times at rising levels, first-event latency against the baselines."""
from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from tests.bench.client import Turn, integrity, latency, relay_turn, sse_turn, ws_open, ws_turn
from tests.bench.harness import CPU, N_USERS, PACED, Bench, log, stream_summary
from tests.bench.report import ratio
from tests.bench.server import Server


async def run(bench: Bench) -> None:
    app, ch, asgi = bench.servers["app"], bench.servers["channels"], bench.servers["asgi"]
    await bench.record(app, bench.tokens[0], "paced100", PACED)
    out: dict[str, Any] = {}
    turns_each = bench.p["conc_turns"]
    for level in bench.p["levels"]:
        rng = random.Random(level)
        plan = [(rng.uniform(0, 1.0), [rng.uniform(0.1, 0.4) for _ in range(turns_each)]) for _ in range(level)]
        row: dict[str, Any] = {}
        for name, server in (("app", app), ("channels", ch), ("asgi", asgi)):
            row[name] = await level_run(bench, name, server, level, plan)
        row["server_added_first_event_p99_ms"] = round(row["app"]["first_event_p99_ms"] - row["asgi"]["first_event_p99_ms"], 2)
        row["server_added_first_event_p50_ms"] = round(row["app"]["first_event_p50_ms"] - row["asgi"]["first_event_p50_ms"], 2)
        row["cpu_ratio_app_channels"] = ratio(row["app"]["cpu_per_event_us"], row["channels"]["cpu_per_event_us"])
        out[str(level)] = row
        log(f"  {level} concurrent: app p99 first event {row['app']['first_event_p99_ms']} ms, "
            f"bare ASGI {row['asgi']['first_event_p99_ms']} ms; {row['app']['events_per_s']} events/s")
    bench.results["concurrent"] = out


async def level_run(bench: Bench, name: str, server: Server, level: int, plan: list[tuple[float, list[float]]]) -> dict[str, Any]:
    """`level` conversations on `server`, each starting and thinking as `plan` says, with one SSE client alongside."""
    socks = await asyncio.gather(*(ws_open(server.ws_url, bench.tokens[i] if name == "app" else None) for i in range(level)))
    turns: list[Turn] = []
    sse: list[Turn] = []

    async def client(i: int) -> None:
        start, thinks = plan[i]
        await asyncio.sleep(start)
        conv = None
        for think in thinks:
            if name == "app":
                t = await ws_turn(socks[i], PACED, conv)
                conv = t.conversation_id
            else:
                t = await relay_turn(socks[i], "paced100", pace=True)
            turns.append(t)
            await asyncio.sleep(think)

    async def sse_client() -> None:  # one SSE client alongside the websockets
        await asyncio.sleep(0.5)
        for _ in range(len(plan[0][1])):
            sse.append(await sse_turn(server.port, bench.tokens[N_USERS - 1], PACED, None))
            await asyncio.sleep(0.2)

    cpu = CPU(server)
    t0, client_cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(client(i) for i in range(level)), *((sse_client(),) if name == "app" else ()))
    wall = time.perf_counter() - t0
    client_share = (time.process_time() - client_cpu0) / wall
    used = cpu.used()[server.name]
    for s in socks:
        await s.close()
    summary = stream_summary(turns + sse, used)
    summary.update(latency(turns))  # latency of the websocket turns; SSE separately below
    summary["events_per_s"] = round(summary["events"] / wall)
    summary["server_cpu_share"] = round(used / wall, 2)
    summary["client_cpu_share"] = round(client_share, 2)
    if sse:
        summary["sse"] = {**latency(sse), **integrity(sse)}
    return summary
