"""Memory per retained finished answer, measured from outside real server processes (daphne and uvicorn).

    python -m tests.bench.memory [--servers daphne,uvicorn] [--answers 4] [--tokens 200000] [--ttl 40] [--env NAME=VALUE]

For each server: a fresh SQLite database in a temporary directory, one server process with production settings
(DEBUG off, JSON logs, the in-memory run log, MALLOC_ARENA_MAX=2 as docs/deployment.md sets, the benchmark model),
driven by websocket clients in this process (each answer on its own socket, closed once the answer is complete).
RSS is read from /proc/<pid>/status of the server process, 5 s after its last client left; nothing here trims,
collects or otherwise touches the server's memory.

The cold baseline is read after two short warm-up answers; the baseline after one long answer more has come and
gone (its run expired): what any server that has served a long answer holds anyway (the database driver's
per-connection high-water - SQLite's page cache and its cached statements' last bound values - and the allocator's
grown heaps). Then `--answers` long answers, all retained at once (the TTL outlasts them; the oldest is replayed
from its middle to prove it), then the TTL passes (and the runs no longer replay: `resync`).

Prints JSON, one object per server: the RSS readings, the growth per retained answer as a multiple of its text
(UTF-8 bytes) from the baseline (`growth_x_text`) and from the cold one, and the RSS after the TTL against both.
tests/hardening/test_memory.py runs it and checks growth_x_text <= 3 and the end within 10% of the baseline, for both.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.client import Turn, read_run, send_frame, ws_open
from tests.bench.server import ROOT, Server

LOGS = ROOT / "var" / "bench" / "logs"  # the servers' output (memory-daphne.log, memory-uvicorn.log)
SECRET = "memory-bench-" + "m" * 50
WARM_TOKENS = 2000
# seconds between the last client leaving and the RSS reading: the server's own trim runs a second or three after a
# long answer ends (after its save, title and connection close); a monitoring scrape comes later still
SETTLE = 5.0


def server_env(database_url: str, ttl: float, extra: dict[str, str]) -> dict[str, str]:
    """Production settings with the bench model, one process, the in-memory run log; `extra` wins (an operator's env)."""
    return {
        "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": database_url, "REDIS_URL": "",
        "DEBUG": "False", "SECRET_KEY": SECRET, "ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "WARNING",
        "CHAT_PROVIDER": "tests.bench.provider.BenchProvider", "CHAT_RUN_LOG_TTL": str(ttl),
        "CHAT_RATE_LIMIT_PER_MINUTE": "100000", "CHAT_MAX_RUNNING_PER_USER": "1000",
        "MALLOC_ARENA_MAX": "2",  # docs/deployment.md
        **extra,
    }


def manage(env: dict[str, str], *args: str) -> str:
    out = subprocess.run([sys.executable, *args], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{out.stderr[-3000:]}")
    return out.stdout


async def answer(url: str, token: str, tokens: int) -> tuple[Turn, str, dict[int, str]]:
    """One long answer on a socket of its own, closed once the answer is complete (the client is gone): the turn, its
    text and its text deltas by seq."""
    message: list[str] = []
    deltas: dict[int, str] = {}

    def keep(ev: dict[str, Any]) -> None:
        if ev["type"] == "text_delta":
            deltas[ev["seq"]] = ev["text"]
        elif ev["type"] == "complete":
            message.append(ev["payload"]["message"])

    ws = await ws_open(url, token)
    try:
        await ws.send(send_frame(f"bench:tokens={tokens}", None))
        turn = await read_run(ws, time.perf_counter(), Turn(), on_event=keep, timeout=600)
    finally:
        await ws.close()
    assert turn.ok and turn.text_matches and turn.check.gaps == 0, (turn.error, turn.text_matches)
    return turn, message[0], deltas


async def replay(url: str, token: str, run_id: str, after_seq: int) -> tuple[str, str]:
    """chat.resume of a finished run: ("complete", the text replayed after `after_seq`) or (the error code, "")."""
    ws = await ws_open(url, token)
    texts: list[str] = []
    try:
        await ws.send(json.dumps({"type": "chat.resume", "run_id": run_id, "after_seq": after_seq}))
        async with asyncio.timeout(120):
            while True:
                ev = json.loads(await ws.recv())
                if "seq" not in ev:
                    return str(ev.get("code")), ""
                if ev["type"] == "text_delta":
                    texts.append(ev["text"])
                if ev["type"] in ("complete", "error", "cancelled"):
                    return ev["type"], "".join(texts)
    finally:
        await ws.close()


def settled_rss(server: Server, seconds: float = SETTLE) -> int:
    """The server's RSS (from /proc/<pid>/status) `seconds` after its last client left."""
    time.sleep(seconds)
    return server.rss()


async def measure(kind: str, args: argparse.Namespace, tmp: Path, extra: dict[str, str]) -> dict[str, Any]:
    """One server process of `kind`: the baselines, the retained answers, after the TTL."""
    env = server_env(f"sqlite:///{tmp / kind}.sqlite3", args.ttl, extra)
    manage(env, "manage.py", "migrate", "--noinput")
    token = json.loads(manage(env, "-m", "tests.bench.dbsetup", "users", "1").splitlines()[-1])["tokens"][0]
    server = Server(f"memory-{kind}", "config.asgi:application", env, LOGS, server=kind).start()
    rss = lambda: asyncio.to_thread(settled_rss, server)  # noqa: E731
    try:
        url = server.ws_url
        for _ in range(args.warm):  # imports, caches, the first connections and saves
            await answer(url, token, WARM_TOKENS)
        cold = await rss()
        for _ in range(args.warm_long):  # and the high-water a long answer leaves in any running server
            await answer(url, token, args.tokens)
        if args.warm_long:
            await asyncio.sleep(args.ttl + args.grace)  # its run is let go
        baseline = await rss()
        after: list[int] = []
        sizes: list[int] = []
        run_ids: list[str] = []
        seconds: list[float] = []
        first: dict[int, str] = {}
        for i in range(args.answers):
            started = time.monotonic()
            turn, text, deltas = await answer(url, token, args.tokens)
            seconds.append(round(time.monotonic() - started, 1))
            sizes.append(len(text.encode()))
            run_ids.append(turn.run_id)
            first = deltas if i == 0 else first
            after.append(await rss())
        last_end = time.monotonic()
        # every answer is still retained: the oldest replays from its middle (the same text follows; it is the first
        # to expire, so the others are retained too)
        middle = sorted(first)[len(first) // 2]
        status, replayed = await replay(url, token, run_ids[0], middle)
        retained_ok = status == "complete" and replayed == "".join(t for seq, t in sorted(first.items()) if seq > middle)
        after_replay = await rss()
        await asyncio.sleep(max(0.0, args.ttl - (time.monotonic() - last_end)) + args.grace)  # past every run's retention
        end = await rss()
        expired, _ = await replay(url, token, run_ids[-1], middle)
        text_bytes = sum(sizes)
        return {
            "server": kind, "answers": args.answers, "tokens": args.tokens, "ttl": args.ttl, "env": extra,
            "answer_bytes": sizes, "answer_seconds": seconds, "cold_rss": cold, "baseline_rss": baseline,
            "rss_after_each": after, "growth": after[-1] - baseline, "growth_x_text": round((after[-1] - baseline) / text_bytes, 2),
            "growth_x_text_from_cold": round((after[-1] - cold) / text_bytes, 2), "replayed_while_retained": retained_ok,
            "rss_after_replay": after_replay, "rss_after_ttl": end, "after_ttl_vs_baseline": round((end - baseline) / baseline, 3),
            "after_ttl_vs_cold": round((end - cold) / cold, 3), "resume_after_ttl": expired,
        }
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default="daphne,uvicorn", help="comma-separated: daphne, uvicorn")
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=200_000, help="tokens per answer (about 5 bytes of text each)")
    parser.add_argument("--ttl", type=float, default=90.0,
                        help="CHAT_RUN_LOG_TTL of the server (seconds): longer than the answers take, so all are retained at once")
    parser.add_argument("--grace", type=float, default=4.0, help="seconds past the TTL before the last reading")
    parser.add_argument("--warm", type=int, default=2, help=f"short warm-up answers ({WARM_TOKENS} tokens) before the cold baseline")
    parser.add_argument("--warm-long", type=int, default=1,
                        help="long answers (--tokens) after it, let go before the baseline (0: the cold baseline is the baseline)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="more server environment (e.g. MALLOC_TRIM_THRESHOLD_=...); repeatable")
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.env)
    with tempfile.TemporaryDirectory(prefix="pagechat-memory-") as tmp:
        for kind in args.servers.split(","):
            print(json.dumps(asyncio.run(measure(kind.strip(), args, Path(tmp), extra))), flush=True)


if __name__ == "__main__":
    main()
