"""Bench scenario 8, the same app on daphne and on uvicorn: per turn and per streamed event."""
from __future__ import annotations

import asyncio
import random
from typing import Any

from tests.bench.client import Turn, integrity, latency, pct, relay_turn, ws_open, ws_turn
from tests.bench.harness import TURN, VAR, Bench, app_env, per_event_us
from tests.bench.report import ratio
from tests.bench.scenarios.concurrent import level_run
from tests.bench.server import Server, relay_server


async def run(bench: Bench) -> None:
    """Sequential 100-token turns (beside the bare Channels relay on the same server), one uncoalesced stream and
    50 concurrent paced conversations on both servers."""
    out: dict[str, Any] = {}
    started: list[Server] = []
    try:
        for name in ("daphne", "uvicorn"):
            for coalesce, suffix in (("", ""), ("0", "_raw")):
                env = app_env(bench.db_url) if not coalesce else app_env(bench.db_url, CHAT_COALESCE_WINDOW="0")
                srv = Server(f"{name}{suffix}", "tests.bench.asgi_counting:application", env, VAR / "logs", server=name).start()
                started.append(srv)
        # the bare Channels relay on each server: the 100-token-turn bar compares the app with the relay on the
        # same server (uvicorn's transport costs less per frame than daphne's)
        for name in ("daphne", "uvicorn"):
            started.append(relay_server(f"relay_{name}", VAR / "logs", VAR / "frames", server=name).start())
        bench.extra_servers = started
        by = {s.name: s for s in started}
        for name in ("daphne", "uvicorn"):
            out[name] = {}
        await bench.record(by["uvicorn"], bench.tokens[7], "servers100", TURN)
        # sequential turns, interleaved in blocks of 10
        socks = {k: await ws_open(by[k].ws_url, bench.tokens[7]) for k in ("daphne", "uvicorn")}
        relays = {k: await ws_open(by[f"relay_{k}"].ws_url) for k in ("daphne", "uvicorn")}
        seq: dict[str, list[Turn]] = {"daphne": [], "uvicorn": []}
        cpu: dict[str, float] = {"daphne": 0.0, "uvicorn": 0.0, "relay_daphne": 0.0, "relay_uvicorn": 0.0}
        for k in socks:
            for _ in range(5):
                await ws_turn(socks[k], TURN, None)
                await relay_turn(relays[k], "servers100")
        for _ in range(max(1, bench.p["srv_turns"] // 10)):
            for k in ("daphne", "uvicorn"):
                c0 = by[k].cpu()
                conv: int | None = None  # a conversation of 10 turns, as in the sequential scenario (the same bar)
                for _ in range(10):
                    seq[k].append(t := await ws_turn(socks[k], TURN, conv))
                    conv = t.conversation_id
                await asyncio.sleep(0.05)
                cpu[k] += by[k].cpu() - c0
            for k in ("daphne", "uvicorn"):
                c0 = by[f"relay_{k}"].cpu()
                for _ in range(10):
                    assert (await relay_turn(relays[k], "servers100")).ok
                await asyncio.sleep(0.05)
                cpu[f"relay_{k}"] += by[f"relay_{k}"].cpu() - c0
        for k in socks:
            await socks[k].close()
            await relays[k].close()
            app_ms, relay_ms = round(cpu[k] / len(seq[k]) * 1000, 2), round(cpu[f"relay_{k}"] / len(seq[k]) * 1000, 2)
            out[k]["sequential"] = {**latency(seq[k]), **integrity(seq[k]), "cpu_per_turn_ms": app_ms,
                                    "relay_cpu_per_turn_ms": relay_ms, "over_relay": ratio(app_ms, relay_ms)}
        # one uncoalesced stream: CPU per event and rate
        n = bench.p["srv_tput_tokens"]
        socks = {k: await ws_open(by[f"{k}_raw"].ws_url, bench.tokens[8]) for k in ("daphne", "uvicorn")}
        tput: dict[str, list[Turn]] = {"daphne": [], "uvicorn": []}
        cpu = {"daphne": 0.0, "uvicorn": 0.0}
        for k in socks:
            await ws_turn(socks[k], f"bench:tokens={n}", None)
        for _ in range(bench.p["srv_rounds"]):
            for k in ("daphne", "uvicorn"):
                c0 = by[f"{k}_raw"].cpu()
                tput[k].append(await ws_turn(socks[k], f"bench:tokens={n}", None, timeout=120))
                await asyncio.sleep(0.05)
                cpu[k] += by[f"{k}_raw"].cpu() - c0
        for k in socks:
            await socks[k].close()
            events = sum(t.events for t in tput[k])
            rates = [t.events / t.end for t in tput[k] if t.end]
            out[k]["throughput"] = {**integrity(tput[k]), "cpu_per_event_us": per_event_us(cpu[k], events),
                                    "events_per_s_median": round(pct(rates, 50) or 0)}
        # 50 concurrent conversations, paced
        rng = random.Random(50)
        plan = [(rng.uniform(0, 1.0), [rng.uniform(0.1, 0.4) for _ in range(bench.p["conc_turns"])]) for _ in range(50)]
        for k in ("daphne", "uvicorn"):
            out[k]["concurrent_50"] = await level_run(bench, "app", by[k], 50, plan)
        a, b = out["daphne"], out["uvicorn"]
        out["ratio_uvicorn_daphne"] = {
            "cpu_per_turn": ratio(b["sequential"]["cpu_per_turn_ms"], a["sequential"]["cpu_per_turn_ms"]),
            "cpu_per_event": ratio(b["throughput"]["cpu_per_event_us"], a["throughput"]["cpu_per_event_us"]),
            "first_event_p99_50": ratio(b["concurrent_50"]["first_event_p99_ms"], a["concurrent_50"]["first_event_p99_ms"]),
        }
    finally:
        for srv in started:
            srv.stop()
        bench.extra_servers = []
    bench.results["servers"] = out
