"""The benchmark's scenarios, one module each, in the order a full run measures them: each module's `run(bench)`
(a coroutine function, or a plain one for those that start their own processes) adds its results under its name."""
from __future__ import annotations

from types import ModuleType

from tests.bench.scenarios import burst, capacity, concurrent, dbwrites, history, idle, peers, redis, sequential, servers, sources, throughput

SCENARIOS: dict[str, ModuleType] = {
    "sequential": sequential, "throughput": throughput, "concurrent": concurrent, "idle": idle, "dbwrites": dbwrites,
    "history": history, "peers": peers, "servers": servers, "burst": burst, "capacity": capacity, "redis": redis, "sources": sources,
}
SERVERLESS = ("redis", "sources")  # scenarios that start their own processes, not the shared app server
