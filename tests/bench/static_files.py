"""Static files under daphne without a proxy: requests/s for the tray's JS with WhiteNoise and with ServeStatic,
and what each costs every other request (GET of the API root, an async view) against no static server at all.

    .venv/bin/python -m tests.bench.static_files [--seconds 5] [--runs 3] [--connections 20]

Needs WhiteNoise too (`.venv/bin/pip install whitenoise==6.12.0`); not part of `make test`.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.server import ROOT, Server

PATHS = {"static": "/static/chat/tray.js", "api": "/api/"}


async def _load(port: int, path: str, seconds: float, connections: int) -> tuple[int, int]:
    """Keep-alive GETs from `connections` clients for `seconds`: (ok responses, failures)."""
    ok = bad = 0
    deadline = time.monotonic() + seconds
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\n\r\n".encode()

    async def client() -> None:
        nonlocal ok, bad
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.monotonic() < deadline:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
            if head.startswith(b"HTTP/1.1 200"):
                ok += 1
            else:
                bad += 1
        writer.close()

    await asyncio.gather(*(client() for _ in range(connections)))
    return ok, bad


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=20)
    args = parser.parse_args()
    names = ("whitenoise", "servestatic", "none")
    with tempfile.TemporaryDirectory() as tmp:
        base = {"DJANGO_SETTINGS_MODULE": "tests.bench.static_settings", "BENCH_STATIC_ROOT": f"{tmp}/static",
                "DEBUG": "0", "SECRET_KEY": "bench-only-secret", "ALLOWED_HOSTS": "127.0.0.1"}
        subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT,
                       env={**os.environ, **base, "BENCH_STATIC": "none"}, check=True)
        servers = {n: Server(n, "config.asgi:application", {**base, "BENCH_STATIC": n}, Path(tmp) / "logs").start() for n in names}
        cases = [(n, k) for n in names for k in PATHS if not (n == "none" and k == "static")]
        rates: dict[tuple[str, str], list[float]] = {c: [] for c in cases}
        cpus: dict[tuple[str, str], list[float]] = {c: [] for c in cases}
        try:
            for name, kind in cases:
                asyncio.run(_load(servers[name].port, PATHS[kind], 1, 4))  # warm up
            for _ in range(args.runs):  # interleaved, so load from elsewhere on the machine hits all alike
                for name, kind in cases:
                    server = servers[name]
                    cpu = server.cpu()
                    ok, bad = asyncio.run(_load(server.port, PATHS[kind], args.seconds, args.connections))
                    assert bad == 0, f"{name} {kind}: {bad} failed requests"
                    rates[(name, kind)].append(ok / args.seconds)
                    cpus[(name, kind)].append(1e3 * (server.cpu() - cpu) / max(ok, 1))
        finally:
            for server in servers.values():
                server.stop()
    print(f"{args.connections} keep-alive connections, {args.runs} interleaved runs of {args.seconds:g} s each (median):")
    for name, kind in cases:
        runs = ", ".join(f"{r:.0f}" for r in rates[(name, kind)])
        print(f"{name:12s} GET {PATHS[kind]:22s} {statistics.median(rates[(name, kind)]):6.0f} req/s (runs: {runs}), "
              f"server CPU {statistics.median(cpus[(name, kind)]):.2f} ms/request")


if __name__ == "__main__":
    main()
