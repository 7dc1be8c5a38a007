"""Bench scenario 7, the peer: Chainlit streaming the same answer."""
from __future__ import annotations

import asyncio
from typing import Any

from tests.bench.client import Turn, ms, pct, ws_open, ws_turn
from tests.bench.harness import VAR, Bench, app_env, log
from tests.bench.peer import ChainlitClient, chainlit_server, chainlit_venv
from tests.bench.report import ratio
from tests.bench.server import Server
from tests.bench.words import answer_text


async def run(bench: Bench) -> None:
    """The same 2,000-token answer (same words) from Chainlit and from the app, interleaved, CPU per token."""
    n, rounds = bench.p["peer_tokens"], bench.p["peer_rounds"]
    raw, app = bench.servers["app_raw"], bench.servers["app"]
    log("  installing / starting the Chainlit peer (its own virtualenv under var/bench)")
    peer = chainlit_server(VAR, VAR / "logs").start()
    # the production server too (Chainlit itself runs on uvicorn): the same app, coalescing off and default
    uv_raw = Server("peers_uvicorn_raw", "tests.bench.asgi_counting:application",
                    app_env(bench.db_url, CHAT_COALESCE_WINDOW="0"), VAR / "logs", server="uvicorn").start()
    uv = Server("peers_uvicorn", "tests.bench.asgi_counting:application", bench.db_env, VAR / "logs", server="uvicorn").start()
    bench.extra_servers = [peer, uv_raw, uv]
    client = ChainlitClient(chainlit_venv(VAR), peer.port)
    message = f"bench:tokens={n}"
    apps = {"app_raw": raw, "app": app, "uvicorn_raw": uv_raw, "uvicorn": uv}
    sockets = {name: await ws_open(server.ws_url, bench.tokens[5 + i]) for i, (name, server) in enumerate(apps.items())}
    sides: dict[str, dict[str, Any]] = {k: {"cpu": 0.0, "turns": [], "events": 0, "text_ok": 0}
                                        for k in ("chainlit", *apps)}
    expected = answer_text(n)
    try:
        await asyncio.to_thread(client.turn, n)  # warm-up
        for ws in sockets.values():
            await ws_turn(ws, message, None)
        for _ in range(rounds):
            for name, server in (("chainlit", peer), *apps.items()):
                c0 = server.cpu()
                if name == "chainlit":
                    r = await asyncio.to_thread(client.turn, n)
                    t = Turn(ok=True, first_event=r["first_event"], first_text=r["first_event"], end=r["end"], events=r["events"])
                    text_ok = r["text"] == expected
                else:
                    t = await ws_turn(sockets[name], message, None, timeout=120)
                    text_ok = t.ok and t.text_matches
                await asyncio.sleep(0.05)  # the server's own bookkeeping after the last frame
                side = sides[name]
                side["cpu"] += server.cpu() - c0
                side["turns"].append(t)
                side["events"] += t.events
                side["text_ok"] += int(text_ok)
    finally:
        client.close()
        for w in sockets.values():
            await w.close()
        for srv in (peer, uv_raw, uv):
            srv.stop()
        bench.extra_servers = []
    out: dict[str, Any] = {"tokens_per_answer": n, "rounds": rounds}
    for name, side in sides.items():
        turns = side["turns"]
        out[name] = {"cpu_per_token_us": round(side["cpu"] / (n * len(turns)) * 1e6, 1),
                     "frames_per_answer": round(side["events"] / len(turns)), "answers_complete": side["text_ok"],
                     "answer_ms_median": ms(pct([t.end for t in turns if t.end], 50)),
                     "first_event_ms_median": ms(pct([t.first_event for t in turns if t.first_event], 50))}
    out["ratio_coalescing_off"] = ratio(out["app_raw"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
    out["ratio_default"] = ratio(out["app"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
    out["ratio_coalescing_off_uvicorn"] = ratio(out["uvicorn_raw"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
    out["ratio_default_uvicorn"] = ratio(out["uvicorn"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
    bench.results["peers"] = out
