"""Bench scenario 1, one client, sequential turns: a turn at a time over a websocket (and SSE), against the two baselines."""
from __future__ import annotations

from tests.bench.client import Turn, relay_turn, sse_turn, ws_open, ws_turn
from tests.bench.harness import CPU, TURN, Bench, ThreadCPU, stream_summary, thread_split
from tests.bench.report import ratio


async def run(bench: Bench) -> None:
    app, ch, asgi = bench.servers["app"], bench.servers["channels"], bench.servers["asgi"]
    await bench.record(app, bench.tokens[0], "turn100", TURN)
    ws_app = await ws_open(app.ws_url, bench.tokens[0])
    ws_ch, ws_asgi = await ws_open(ch.ws_url), await ws_open(asgi.ws_url)
    for _ in range(10):  # warm-up
        await ws_turn(ws_app, TURN, None)
        await relay_turn(ws_ch, "turn100")
        await relay_turn(ws_asgi, "turn100")
    runs: dict[str, list[Turn]] = {"app": [], "channels": [], "asgi": []}
    if bench.profile:  # every thread of the app: where a turn's fixed cost goes
        app.bench("profile/start")
    cpu = CPU(app, ch, asgi)
    threads0 = app.cpu_by_thread()
    stats0 = app.bench("stats")
    conv: int | None = None
    for block in range(bench.p["seq_turns"] // 10):
        conv = None  # a new conversation every 10 turns, as a user would
        for _ in range(10):
            t = await ws_turn(ws_app, TURN, conv)
            conv = t.conversation_id
            runs["app"].append(t)
        for _ in range(10):
            runs["channels"].append(await relay_turn(ws_ch, "turn100"))
        for _ in range(10):
            runs["asgi"].append(await relay_turn(ws_asgi, "turn100"))
    used = cpu.used()
    threads1 = app.cpu_by_thread()
    stats1 = app.bench("stats")
    if bench.profile:
        bench.profile_save(app, "app-sequential")
    # The fixed part of a turn: the same turns with a 1-token answer (interleaved with 100-token ones, so both
    # see the same machine); the difference over 99 tokens is the cost of one more token.
    fixed = {"t1": ThreadCPU(app), "t100": ThreadCPU(app)}
    fixed_n = 0
    for _ in range(bench.p["seq_turns"] // 10):
        for key, message in (("t1", "bench:tokens=1"), ("t100", TURN)):
            conv = None
            with fixed[key].measuring():
                for _ in range(10):
                    conv = (await ws_turn(ws_app, message, conv)).conversation_id
        fixed_n += 10
    for ws in (ws_app, ws_ch, ws_asgi):
        await ws.close()
    # SSE on its own, so the app's CPU delta is the SSE path's
    sse: list[Turn] = []
    cpu_sse = CPU(app)
    for i in range(bench.p["sse_turns"]):
        sse.append(await sse_turn(app.port, bench.tokens[1], TURN, None))
    sse_used = cpu_sse.used()["app"]
    out = {name: stream_summary(turns, used[name]) for name, turns in runs.items()}
    out["sse"] = stream_summary(sse, sse_used)
    n = len(runs["app"])
    out["app"]["db_writes_per_turn"] = round((stats1["db_writes"] - stats0["db_writes"]) / n, 2)
    out["app"]["db_statements_per_turn"] = round((stats1["db_statements"] - stats0["db_statements"]) / n, 2)
    # where a turn's CPU goes: the event loop, the admission thread, the runs' database thread, the rest
    split = thread_split({name: threads1[name] - threads0.get(name, 0.0) for name in threads1}, n)
    out["app"]["cpu_per_turn_by_thread_ms"] = split
    out["fixed"] = {"turns": fixed_n, "cpu_per_1_token_turn_ms": round(fixed["t1"].total / fixed_n * 1000, 3),
                    "cpu_per_100_token_turn_ms": round(fixed["t100"].total / fixed_n * 1000, 3),
                    "cpu_per_token_us": round((fixed["t100"].total - fixed["t1"].total) / fixed_n / 99 * 1e6, 2),
                    "cpu_per_1_token_turn_by_thread_ms": thread_split(fixed["t1"].by_name, fixed_n)}
    a, b = out["app"], out["asgi"]
    out["server_added"] = {k: round(a[k] - b[k], 2) for k in ("first_event_p50_ms", "first_event_p99_ms", "first_text_p50_ms", "first_text_p99_ms")}
    out["sse_server_added"] = {k: round(out["sse"][k] - b[k], 2) for k in ("first_event_p50_ms", "first_event_p99_ms", "first_text_p50_ms", "first_text_p99_ms")}
    out["cpu_per_turn_ratio_app_channels"] = ratio(a["cpu_per_turn_ms"], out["channels"]["cpu_per_turn_ms"])
    bench.results["sequential"] = out
