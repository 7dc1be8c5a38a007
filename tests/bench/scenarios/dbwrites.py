"""Bench scenario 5, DB writes per turn: the SQL statements one turn costs."""
from __future__ import annotations

import asyncio
from typing import Any

from tests.bench.client import ms, ws_open, ws_turn
from tests.bench.harness import Bench


async def run(bench: Bench) -> None:
    app = bench.servers["app"]
    ws = await ws_open(app.ws_url, bench.tokens[3])
    out: dict[str, Any] = {}
    for label, message in (("instant", "bench:tokens=500"), ("100_tok_s", "bench:tokens=500,rate=100"),
                           ("paced_conversation_turn2", "bench:tokens=500,rate=100")):
        conv = out.get("_conv") if label == "paced_conversation_turn2" else None
        await asyncio.sleep(0.5)
        s0 = app.bench("stats")
        t = await ws_turn(ws, message, conv, timeout=60)
        await asyncio.sleep(0.5)
        s1 = app.bench("stats")
        out["_conv"] = t.conversation_id
        by_table = {k: s1["writes_by_table"].get(k, 0) - s0["writes_by_table"].get(k, 0) for k in s1["writes_by_table"]}
        hb = s1["db_heartbeat_writes"] - s0["db_heartbeat_writes"]
        out[label] = {"ok": t.ok, "tokens": 500, "events": t.events, "turn_ms": ms(t.end),
                      "db_writes": s1["db_writes"] - s0["db_writes"] - hb, "heartbeat_writes": hb,
                      "db_statements": s1["db_statements"] - s0["db_statements"],
                      "writes_by_table": {k: v for k, v in by_table.items() if v}}
    out.pop("_conv")
    await ws.close()
    bench.results["dbwrites"] = out
