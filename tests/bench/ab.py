"""A/B: the app at another commit and at this work tree, side by side with the bare Channels relay.

`python -m tests.bench.ab --base <rev> [--turns 600] [--message bench:tokens=100] [--server daphne|uvicorn]
[--pg-url postgres://postgres@127.0.0.1:5432/test]`

Checks `<rev>` out into a temporary git worktree (sharing this checkout's .venv, so both sides run on the same
packages), gives each side its own database (SQLite files, or two databases created on the PostgreSQL server named
by --pg-url and dropped afterwards) and server process, and runs sequential turns (a new conversation every 10, as
in the sequential scenario) in blocks of 10 that alternate base, head and the relay (on the same server as the app).
Prints server CPU per turn (by thread), the first event's median and the head/base ratio. On this shared machine,
two runs of the same code differ by about 1%; changes smaller than that need more turns or several runs.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.bench import frames as frame_sets
from tests.bench.client import relay_turn, ws_open, ws_turn
from tests.bench.harness import TURN, VAR, ThreadCPU, app_env, prepare_db, thread_split
from tests.bench.server import ROOT, Server, relay_server


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def _database(side: str, pg_url: str | None) -> str:
    """A fresh database for one side: a SQLite file under var/bench, or a new PostgreSQL database."""
    if pg_url is None:
        path = VAR / f"ab-{side}.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        return f"sqlite:///{path}"
    import psycopg

    with psycopg.connect(pg_url.replace("postgres://", "postgresql://", 1), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "bench_ab_{side}"')
        admin.execute(f'CREATE DATABASE "bench_ab_{side}"')
    return pg_url.rsplit("/", 1)[0] + f"/bench_ab_{side}"


def _drop(side: str, pg_url: str | None) -> None:
    if pg_url is None:
        return
    import psycopg

    with psycopg.connect(pg_url.replace("postgres://", "postgresql://", 1), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "bench_ab_{side}" WITH (FORCE)')


async def _compare(servers: dict[str, Server], tokens: dict[str, str], message: str, turns: int) -> dict[str, Any]:
    head = await ws_open(servers["head"].ws_url, tokens["head"])
    recorded = await ws_turn(head, message, None, record=True)
    frame_sets.save("ab", recorded.frames, recorded.offsets)
    socks = {"base": await ws_open(servers["base"].ws_url, tokens["base"]), "head": head, "relay": await ws_open(servers["relay"].ws_url)}
    first: dict[str, list[float]] = {"base": [], "head": []}

    async def block(side: str, measured: bool) -> None:
        conversation: int | None = None
        for _ in range(10):
            if side == "relay":
                await relay_turn(socks["relay"], "ab")
                continue
            turn = await ws_turn(socks[side], message, conversation)
            assert turn.ok, turn.error
            conversation = turn.conversation_id
            if measured and turn.first_event is not None:
                first[side].append(turn.first_event)

    for side in ("base", "head", "relay"):  # warm-up
        await block(side, False)
        await block(side, False)
    apps = {side: ThreadCPU(servers[side]) for side in ("base", "head")}
    relay_cpu = 0.0  # the relay names no threads: its CPU in all
    for i in range(turns // 10):
        for side in (("base", "head", "relay") if i % 2 else ("head", "base", "relay")):
            if side == "relay":
                c0 = servers["relay"].cpu()
                await block("relay", True)
                relay_cpu += servers["relay"].cpu() - c0
                continue
            with apps[side].measuring():
                await block(side, True)
    for ws in socks.values():
        await ws.close()
    n = turns // 10 * 10
    per = {**{side: round(a.total / n * 1000, 3) for side, a in apps.items()}, "relay": round(relay_cpu / n * 1000, 3)}
    return {
        "turns": n, "message": message, "cpu_per_turn_ms": per,
        "cpu_per_turn_by_thread_ms": {side: thread_split(a.by_name, n) for side, a in apps.items()},
        "first_event_median_ms": {side: round(statistics.median(v) * 1000, 3) for side, v in first.items() if v},
        "head_over_base": round(per["head"] / per["base"], 3), "over_relay": {s: round(per[s] / per["relay"], 2) for s in ("base", "head")},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit to compare this work tree with")
    ap.add_argument("--turns", type=int, default=600, help="measured turns per side (blocks of 10)")
    ap.add_argument("--message", default=TURN, help="each turn's message (bench:tokens=N[,rate=R])")
    ap.add_argument("--server", default="daphne", choices=("daphne", "uvicorn"))
    ap.add_argument("--pg-url", default=None, help="run both sides on PostgreSQL: the server's maintenance database URL")
    args = ap.parse_args()
    (VAR / "logs").mkdir(parents=True, exist_ok=True)
    os.environ["BENCH_FRAMES_DIR"] = str(VAR / "frames")  # where this process records the frames the relay serves
    rev = _git("rev-parse", "--verify", f"{args.base}^{{commit}}").strip()
    tree = Path(tempfile.mkdtemp(prefix="pagechat-ab-"))
    servers: dict[str, Server] = {}
    try:
        _git("worktree", "add", "--detach", str(tree / "base"), rev)
        (tree / "base" / ".venv").symlink_to(ROOT / ".venv")
        tokens: dict[str, str] = {}
        for side, root in (("base", tree / "base"), ("head", ROOT)):
            env = app_env(_database(side, args.pg_url))
            tokens[side] = prepare_db(env, users=1, cwd=root)[0]
            servers[side] = Server(f"ab-{side}", "tests.bench.asgi_counting:application", env, VAR / "logs", server=args.server, cwd=root).start()
        servers["relay"] = relay_server("ab-relay", VAR / "logs", VAR / "frames", server=args.server).start()
        out = asyncio.run(_compare(servers, tokens, args.message, args.turns))
    finally:
        for srv in servers.values():
            srv.stop()
        subprocess.run(["git", "worktree", "remove", "--force", str(tree / "base")], cwd=ROOT, capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
        for side in ("base", "head"):
            _drop(side, args.pg_url)
    out = {"base": f"{args.base} ({rev[:7]})", "server": args.server, "database": "postgresql" if args.pg_url else "sqlite", **out}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
