"""Bench scenario 9, capacity: conversations streaming at 30 tokens/s until the server falls behind."""
from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from tests.bench.client import Turn, integrity, latency, ws_open, ws_turn
from tests.bench.harness import CPU, N_USERS, Bench, log


async def run(bench: Bench) -> None:
    """Ramp concurrent conversations (each streaming 60-token answers at 30 tokens/s, back to back with a short
    think time) until the first-event p99 passes 100 ms or streams fall behind (an answer > 25% late)."""
    app = bench.servers["app"]
    seconds = bench.p["cap_seconds"]
    message, expected_s = "bench:tokens=60,rate=30", 60 / 30
    out: dict[str, Any] = {"levels": {}, "message": message, "seconds_per_level": seconds}
    best = 0
    for level in bench.p["cap_levels"]:
        socks = []
        for i in range(0, level, 50):
            socks += await asyncio.gather(*(ws_open(app.ws_url, bench.tokens[j % N_USERS]) for j in range(i, min(level, i + 50))))
        turns: list[Turn] = []
        stop_at = time.perf_counter() + seconds
        rng = random.Random(level)

        async def conversation(ws: Any) -> None:
            await asyncio.sleep(rng.uniform(0, expected_s))  # spread the starts over one answer
            conv = None
            while time.perf_counter() < stop_at:
                t = await ws_turn(ws, message, conv, timeout=60)
                conv = t.conversation_id
                turns.append(t)
                await asyncio.sleep(rng.uniform(0.1, 0.3))

        cpu = CPU(app)
        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(conversation(ws) for ws in socks))
        wall = time.perf_counter() - t0
        used = cpu.used()["app"]
        client_share = round((time.process_time() - c0) / wall, 2)
        for k in range(0, len(socks), 100):
            await asyncio.gather(*(ws.close() for ws in socks[k:k + 100]))
        late = sum(1 for t in turns if t.end is None or t.end > expected_s * 1.25)
        lat = latency(turns)
        row = {**lat, **integrity(turns), "late_answers": late, "late_share": round(late / max(len(turns), 1), 3),
               "server_cpu_share": round(used / wall, 2), "client_cpu_share": client_share}
        ok = (lat["first_event_p99_ms"] or 1e9) <= 100 and row["late_share"] <= 0.01 and row["failed"] == 0
        row["keeps_up"] = ok
        out["levels"][str(level)] = row
        log(f"  {level} conversations: first event p99 {lat['first_event_p99_ms']} ms, late {late}/{len(turns)}, "
            f"server {row['server_cpu_share']} cores, client {client_share}")
        if not ok:
            break
        best = level
        await asyncio.sleep(1.0)
    out["conversations_per_process"] = best
    top = out["levels"].get(str(best), {})
    out["conversations_per_core"] = round(best / top["server_cpu_share"]) if best and top.get("server_cpu_share") else None
    bench.results["capacity"] = out
