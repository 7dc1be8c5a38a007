"""Bench scenario 10, two processes over PostgreSQL + Redis: a run started on one process, followed on the other."""
from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from tests.bench.client import Turn, integrity, latency, ms, pct, read_run, send_frame, ws_open
from tests.bench.harness import CPU, VAR, Bench, app_env, log, per_event_us, prepare_db
from tests.bench.server import Server


def run(bench: Bench) -> None:
    import psycopg
    import redis as redis_sync

    # where: the server (its maintenance database), the database to create (and drop) and the Redis DB
    pg = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/test")
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/11")
    db = os.environ.get("BENCH_PG_DB") or f"bench_pagechat_{os.getpid()}"
    admin = psycopg.connect(pg.replace("postgres://", "postgresql://", 1), autocommit=True)
    admin.execute(f'CREATE DATABASE "{db}"')
    url = pg.rsplit("/", 1)[0] + "/" + db
    env = app_env(url, REDIS_URL=redis_url)
    a = b = None
    run_ids: list[str] = []
    try:
        log("migrating the bench database (PostgreSQL) and starting two app processes on Redis")
        tokens = prepare_db(env)
        a = Server("redis_a", "tests.bench.asgi_counting:application", env, VAR / "logs").start()
        b = Server("redis_b", "tests.bench.asgi_counting:application", env, VAR / "logs").start()
        bench.extra_servers = [a, b]
        bench.results["redis"] = asyncio.run(_redis(bench, a, b, tokens, run_ids))
    finally:
        for s in (a, b):
            if s is not None:
                s.stop()
        try:
            r = redis_sync.Redis.from_url(redis_url)
            prefix = env.get("CHAT_REDIS_KEY_PREFIX", "chat:")
            keys = [f"{prefix}run:{rid}" for rid in run_ids] + [f"asgi:group:run.{rid}" for rid in run_ids]
            for k in range(0, len(keys), 500):
                r.delete(*keys[k:k + 500]) if keys[k:k + 500] else None
            r.close()
        except Exception as exc:
            log(f"redis cleanup failed: {exc}")
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.close()


async def _redis(bench: Bench, a: Server, b: Server, tokens: list[str], run_ids: list[str]) -> dict[str, Any]:
    convs, turns_each = bench.p["redis_convs"], bench.p["redis_turns"]
    message = "bench:tokens=200,rate=200"
    a_turns: list[Turn] = []
    b_turns: list[Turn] = []
    lags: list[float] = []
    mismatched = 0
    resync = 0

    async def conversation(i: int) -> None:
        nonlocal mismatched, resync
        wa, wb = await ws_open(a.ws_url, tokens[i]), await ws_open(b.ws_url, tokens[i])
        await asyncio.sleep(i * 0.05)
        conv = None
        for _ in range(turns_each):
            b_task: list[asyncio.Task[Turn]] = []
            bt = Turn()

            async def follow_b(run_id: str) -> Turn:
                t0 = time.perf_counter()
                await wb.send(json.dumps({"type": "chat.resume", "run_id": run_id, "after_seq": 0}))
                return await read_run(wb, t0, bt, record=True, arrivals=True)

            def on_event(ev: dict[str, Any]) -> None:
                if ev["seq"] == 1:  # the ack: follow the run from the other process right away
                    run_ids.append(ev["run_id"])
                    b_task.append(asyncio.get_running_loop().create_task(follow_b(ev["run_id"])))

            at = Turn()
            t0 = time.perf_counter()
            await wa.send(send_frame(message, conv))
            await read_run(wa, t0, at, record=True, arrivals=True, on_event=on_event)
            conv = at.conversation_id
            await b_task[0] if b_task else None
            a_turns.append(at)
            b_turns.append(bt)
            if bt.error.startswith("resync"):
                resync += 1
            if bt.frames != at.frames:
                mismatched += 1
            lags.extend(bt.arrivals[s] - at.arrivals[s] for s in at.arrivals if s in bt.arrivals)
        await wa.close()
        await wb.close()

    ca, cb = CPU(a), CPU(b)
    t0 = time.perf_counter()
    await asyncio.gather(*(conversation(i) for i in range(convs)))
    wall = time.perf_counter() - t0
    ua, ub = ca.used()["redis_a"], cb.used()["redis_b"]
    return {
        "conversations": convs, "turns_each": turns_each, "message": message,
        "owner_a": {**latency(a_turns), **integrity(a_turns), "events": sum(t.events for t in a_turns),
                    "cpu_per_event_us": per_event_us(ua, sum(t.events for t in a_turns))},
        "follower_b": {**integrity(b_turns), "events": sum(t.events for t in b_turns), "resync_errors": resync,
                       "streams_differing_from_a": mismatched,
                       "cpu_per_event_us": per_event_us(ub, sum(t.events for t in b_turns))},
        "relay_lag_b_minus_a_p50_ms": ms(pct(lags, 50)), "relay_lag_b_minus_a_p99_ms": ms(pct(lags, 99)),
        "wall_s": round(wall, 2),
    }
