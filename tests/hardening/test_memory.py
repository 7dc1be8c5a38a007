"""Memory per retained finished answer, measured in a clean subprocess (tests/bench/memory.py) driving long
answers from the benchmark model: RSS growth per retained answer <= 3x its text, and back within 10% of the
baseline once the run-log TTL has passed. Marked `slow` (minutes of CPU): `pytest -m slow tests/hardening`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def measure(*args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SQLITE_TEST_NAME")}
    done = subprocess.run([sys.executable, "-m", "tests.bench.memory", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(figures))
    return figures


@pytest.mark.slow
def test_rss_per_retained_answer_and_after_the_ttl() -> None:
    figures = measure("--answers", "3", "--tokens", "200000", "--ttl", "4", "--warm")
    assert figures["handles_left"] == 0
    assert float(figures["growth_per_answer_x_text"]) <= 3.0, figures  # type: ignore[arg-type]
    assert float(figures["after_ttl_vs_baseline"]) <= 0.10, figures  # type: ignore[arg-type]
