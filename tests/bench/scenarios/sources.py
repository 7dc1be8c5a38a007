"""Bench scenario 11, source search: SQLite and PostgreSQL, each in a process of its own (tests/bench/sources.py)."""
from __future__ import annotations

import os

from tests.bench import sources as sources_bench
from tests.bench.harness import Bench


def run(bench: Bench) -> None:
    p = bench.p
    pg_server = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/test").rsplit("/", 1)[0]
    bench.results["sources"] = sources_bench.measure(p["src_objects"], p["src_rounds"], pg_server)
