"""Benchmark entry: `python -m tests.bench.run [--quick] [--scenario NAME ...] [--profile]`.

Starts the real server (daphne + the product ASGI app, wrapped only to count SQL) with a benchmark model,
plus two baselines serving the same recorded frames (a bare Channels relay and a bare ASGI app, both on
daphne), drives them from this process with websocket (and SSE) clients, and writes
tests/bench/results/latest.{md,json} after a full run of every scenario (var/bench/quick.* or partial.* otherwise).
Absolute times on shared machines are noise: compare the ratios measured side by side in one run.
Each scenario is a module of tests/bench/scenarios/ (listed in its __init__); the servers and the results they
share are tests/bench/harness.py's `Bench`.
"""
from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.harness import RESULTS, VAR, Bench, log
from tests.bench.report import bars, markdown, readme_write, verdict
from tests.bench.scenarios import SCENARIOS, SERVERLESS
from tests.bench.server import ROOT, machine_busy, own_cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1", help="smaller runs (< 2 min)")
    ap.add_argument("--scenario", action="append", choices=list(SCENARIOS), help="run only these (repeatable)")
    ap.add_argument("--profile", action="store_true", help="cProfile the app (sequential, throughput and history scenarios; py-spy too, if found, in throughput)")
    ap.add_argument("--py-spy", default=os.environ.get("PY_SPY") or shutil.which("py-spy"), help="py-spy binary for --profile")
    ap.add_argument("--pg-url", help="redis and sources scenarios: PostgreSQL server URL to create their databases through (BENCH_PG_URL)")
    ap.add_argument("--pg-db", help="redis scenario: name of the database it creates and drops (BENCH_PG_DB)")
    ap.add_argument("--redis-url", help="redis scenario: Redis URL with its DB number (BENCH_REDIS_URL, default DB 11)")
    args = ap.parse_args(argv)
    for flag, var in ((args.pg_url, "BENCH_PG_URL"), (args.pg_db, "BENCH_PG_DB"), (args.redis_url, "BENCH_REDIS_URL")):
        if flag:
            os.environ[var] = flag
    chosen = args.scenario or list(SCENARIOS)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # 1,000 sockets on each side; children inherit
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    mode = "quick" if args.quick else "full"
    bench = Bench(mode, args.profile, args.py_spy)
    started = time.perf_counter()
    load: dict[str, float] = {}
    try:
        bench.start(need_app=any(s not in SERVERLESS for s in chosen))
        for name in chosen:
            log(f"scenario {name}")
            t = time.perf_counter()
            busy0, ours0 = machine_busy(), own_cpu() + bench.servers_cpu()
            outcome = SCENARIOS[name].run(bench)
            if inspect.iscoroutine(outcome):  # the ones that start their own processes run their own loops
                asyncio.run(outcome)
            wall = time.perf_counter() - t
            # CPU the rest of the machine used meanwhile (shared machines: read p99s with this in mind)
            load[name] = round(max(0.0, machine_busy() - busy0 - (own_cpu() + bench.servers_cpu() - ours0)) / wall, 2)
            log(f"  done in {wall:.1f}s (other processes used {load[name]} cores meanwhile)")
    finally:
        bench.stop()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "chat", "config", "tools", "payloads", "pages"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit += " + uncommitted changes" if dirty else ""
    meta = {"mode": mode, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
            "command": "make bench" if mode == "full" and not args.scenario else "python -m tests.bench.run " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}",
            "duration_s": round(time.perf_counter() - started, 1), "scenarios": chosen,
            "other_load_cores": load, "loadavg_at_end": Path("/proc/loadavg").read_text().split()[:3]}
    result = {"meta": meta, "bars": [{"bar": b, "measured": m, "target": t, "result": verdict(ok)} for b, m, t, ok in bars(bench.results)],
              "results": bench.results}
    md = markdown(meta, bench.results)
    if set(chosen) == set(SCENARIOS) and mode == "full":  # only a full run replaces the committed result
        out_dir, stem = RESULTS, "latest"
    else:
        out_dir, stem = VAR, "quick" if set(chosen) == set(SCENARIOS) else "partial"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / f"{stem}.md").write_text(md)
    print(md)
    log(f"wrote {out_dir / stem}.md and .json in {meta['duration_s']}s")
    if stem == "latest":
        readme_write(result)
        log("README.md's Performance table regenerated from it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
