"""Bench scenario 4, idle authenticated sockets: memory and CPU of sockets that wait."""
from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.bench.client import ws_open
from tests.bench.harness import Bench
from tests.bench.report import ratio


async def run(bench: Bench) -> None:
    n = bench.p["idle"]
    out: dict[str, Any] = {"sockets": n}
    for name in ("app", "channels", "asgi"):
        server = bench.servers[name]
        if name == "app":
            server.bench("gc")
        await asyncio.sleep(1.0)
        rss0 = server.rss()
        socks = []
        t0 = time.perf_counter()
        for i in range(0, n, 50):  # 100 users x 10 sockets (the per-user socket limit is 20)
            socks += await asyncio.gather(*(ws_open(server.ws_url, bench.tokens[j % 100] if name == "app" else None) for j in range(i, min(n, i + 50))))
        opened = time.perf_counter() - t0
        await asyncio.sleep(2.0)
        if name == "app":
            server.bench("gc")
            await asyncio.sleep(0.5)
        rss1 = server.rss()
        for k in range(0, len(socks), 100):
            await asyncio.gather(*(s.close() for s in socks[k:k + 100]))
        out[name] = {"rss_before_mib": round(rss0 / 2**20, 1), "rss_after_mib": round(rss1 / 2**20, 1),
                     "kib_per_socket": round((rss1 - rss0) / n / 1024, 1), "open_s": round(opened, 2)}
        await asyncio.sleep(1.0)
    out["ratio_app_channels"] = ratio(out["app"]["kib_per_socket"], out["channels"]["kib_per_socket"])
    bench.results["idle"] = out
