"""Bench scenario 2, one stream as fast as it goes: events per second and CPU per event of one long answer."""
from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

from tests.bench.client import Turn, integrity, ms, pct, relay_turn, ws_open, ws_turn
from tests.bench.harness import VAR, Bench, per_event_us
from tests.bench.report import ratio


async def run(bench: Bench) -> None:
    raw, ch, asgi = bench.servers["app_raw"], bench.servers["channels"], bench.servers["asgi"]
    n = bench.p["tput_tokens"]
    message = f"bench:tokens={n}"
    rec = await bench.record(raw, bench.tokens[2], "tput", message)
    ws = {"app": await ws_open(raw.ws_url, bench.tokens[2]), "channels": await ws_open(ch.ws_url), "asgi": await ws_open(asgi.ws_url),
          "asgi_yield": await ws_open(asgi.ws_url)}
    servers = {"app": raw, "channels": ch, "asgi": asgi, "asgi_yield": asgi}
    client_cpu0, wall0 = time.process_time(), time.perf_counter()
    rounds: dict[str, list[Turn]] = {k: [] for k in ws}
    cpu_s: dict[str, float] = {k: 0.0 for k in ws}
    await relay_turn(ws["channels"], "tput")  # warm-up (loads the set)
    await relay_turn(ws["asgi"], "tput")
    spy = None
    if bench.profile:
        raw.bench("profile/start")
        if bench.py_spy:
            spy = subprocess.Popen([bench.py_spy, "record", "-p", str(raw.pid), "-r", "200", "-f", "raw",
                                    "-o", str(VAR / "py-spy-app_raw.txt"), "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(bench.p["tput_rounds"]):
        for name in ("app", "channels", "asgi", "asgi_yield"):
            c0 = servers[name].cpu()
            if name == "app":
                t = await ws_turn(ws[name], message, None)
            else:
                t = await relay_turn(ws[name], "tput", each_turn=name == "asgi_yield")
            await asyncio.sleep(0.05)  # let the server finish its bookkeeping before reading its CPU
            cpu_s[name] += servers[name].cpu() - c0
            rounds[name].append(t)
    if bench.profile:
        if spy is not None:
            spy.send_signal(2)
            spy.wait(timeout=30)
        bench.profile_save(raw, "app_raw")
    for w in ws.values():
        await w.close()
    out: dict[str, Any] = {"events_per_stream": rec.events,
                           "client_cpu_share": round((time.process_time() - client_cpu0) / (time.perf_counter() - wall0), 2)}
    for name, turns in rounds.items():
        rates = [t.events / t.end for t in turns if t.end]
        events = sum(t.events for t in turns)
        out[name] = {**integrity(turns), "events": events, "events_per_s_median": round(pct(rates, 50) or 0),
                     "events_per_s_best": round(max(rates)) if rates else None,
                     "stream_ms_median": ms(pct([t.end for t in turns if t.end], 50)),
                     "cpu_s": round(cpu_s[name], 3), "cpu_per_event_us": per_event_us(cpu_s[name], events),
                     "cpu_per_1000_events_ms": round(cpu_s[name] / events * 1e6, 1) if events else None}
    out["cpu_ratio_app_channels"] = ratio(out["app"]["cpu_per_event_us"], out["channels"]["cpu_per_event_us"])
    out["cpu_ratio_app_asgi"] = ratio(out["app"]["cpu_per_event_us"], out["asgi"]["cpu_per_event_us"])
    out["rate_ratio_app_channels"] = ratio(out["app"]["events_per_s_median"], out["channels"]["events_per_s_median"])
    out["cpu_ratio_app_asgi_yield"] = ratio(out["app"]["cpu_per_event_us"], out["asgi_yield"]["cpu_per_event_us"])
    bench.results["throughput"] = out
