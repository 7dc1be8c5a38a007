"""The 30-minute soak (marked `slow`: `pytest -m slow tests/hardening/test_soak.py`; SOAK_SECONDS to shorten it).

Concurrent users with random disconnects and resumes, cancels and provider faults in a clean process
(tests/bench/soak.py): RSS flat within 10% after warm-up, no leaked tasks or sockets, and the invariants of
tests/resilience/invariants.py hold for every run and for the database."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_soak() -> None:
    seconds = float(os.environ.get("SOAK_SECONDS", "1800"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SQLITE_TEST_NAME")}
    env.setdefault("MALLOC_ARENA_MAX", "2")  # as docs/deployment.md runs the servers
    done = subprocess.run([sys.executable, "-m", "tests.bench.soak", "--seconds", str(seconds), "--users", "6"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=seconds + 600)
    assert done.stdout.strip(), done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(figures, indent=1))
    assert figures["invariants"] == "hold"
    assert figures["rss_spread_after_warmup"] <= 0.10, figures["rss_samples_mb"]
    assert figures["open_sockets"] == 0 and figures["running_runs"] == 0
    assert figures["tasks_after"] == 0, figures["task_names_after"]
    assert sum(n for k, n in figures["turns"].items() if k != "reconnects") > 10 * seconds / 60
    assert done.returncode == 0
