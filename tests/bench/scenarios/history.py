"""Bench scenario 6, message 1 against message 1,000: whether a long conversation slows a turn down."""
from __future__ import annotations

import asyncio
import json
import statistics
from typing import Any

from tests.bench.client import integrity, latency, ws_open, ws_turn
from tests.bench.harness import TURN, Bench, manage
from tests.bench.report import ratio


async def run(bench: Bench) -> None:
    app = bench.servers["app"]
    user = 4
    filled = json.loads(manage(bench.db_env, "-m", "tests.bench.dbsetup", "prefill", str(user), "999").splitlines()[-1])
    # message 100: the history window (HISTORY_MESSAGE_LIMIT) is already full, so 100 -> 1,000 is pure growth
    filled100 = json.loads(manage(bench.db_env, "-m", "tests.bench.dbsetup", "prefill", str(user), "99").splitlines()[-1])
    convs = {"message_1": None, "message_100": filled100["conversation_id"], "message_1000": filled["conversation_id"]}
    ws = await ws_open(app.ws_url, bench.tokens[user])
    for conv in convs.values():  # warm-up
        await ws_turn(ws, TURN, conv)
    sides: dict[str, dict[str, Any]] = {side: {"turns": [], "cpu": [], "stmts": 0} for side in convs}
    block = 2  # fine interleaving: the machine's other load hits all three sides alike
    for _ in range(max(1, bench.p["hist_turns"] // block)):
        for side, conv in convs.items():
            s0, c0 = app.bench("stats"), app.cpu()
            for _ in range(block):
                sides[side]["turns"].append(await ws_turn(ws, TURN, conv))
            await asyncio.sleep(0.05)
            sides[side]["cpu"].append((app.cpu() - c0) / block)
            sides[side]["stmts"] += app.bench("stats")["db_statements"] - s0["db_statements"]
    if bench.profile:  # what message 1,000 costs that message 1 does not: one profile per side
        for side, conv in convs.items():
            app.bench("profile/start")
            for _ in range(20):
                await ws_turn(ws, TURN, conv)
            bench.profile_save(app, f"history-{side}")
    await ws.close()
    out: dict[str, Any] = {"prefilled_messages": filled["messages"]}
    for side, d in sides.items():
        turns = d["turns"]
        # the median block: a garbage collection or a background task landing in one block moves the mean of
        # its side alone (an 8-turn spike once read as 1.3x between two sides that do the same work)
        out[side] = {**latency(turns), **integrity(turns), "cpu_per_turn_ms": round(statistics.median(d["cpu"]) * 1000, 2),
                     "cpu_per_turn_mean_ms": round(sum(d["cpu"]) / len(d["cpu"]) * 1000, 2),
                     "db_statements_per_turn": round(d["stmts"] / len(turns), 1)}
    a, b, c = out["message_1000"], out["message_1"], out["message_100"]
    out["ratio_turn_p50"] = ratio(a["turn_p50_ms"], b["turn_p50_ms"])
    out["ratio_cpu_per_turn"] = ratio(a["cpu_per_turn_ms"], b["cpu_per_turn_ms"])
    out["ratio_first_text_p50"] = ratio(a["first_text_p50_ms"], b["first_text_p50_ms"])
    out["ratio_1000_100_turn_p50"] = ratio(a["turn_p50_ms"], c["turn_p50_ms"])
    out["ratio_1000_100_cpu_per_turn"] = ratio(a["cpu_per_turn_ms"], c["cpu_per_turn_ms"])
    bench.results["history"] = out
