"""The sources bench (tests/bench/sources.py) at a small size: it seeds the articles source, rebuilds the index, times
the demo queries and measures the precision of their top 8, each backend in a process of its own; its `--record`
puts the figures into the results file, whose README table `python -m tests.bench.report --check` then accepts."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pages.demo.search_quality import QUERIES
from tests.bench import report
from tests.bench.sources import record

ROOT = Path(__file__).resolve().parents[2]
OBJECTS = 400  # the shipped corpus (363 articles) and the start of a second copy


def _bench(*args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SQLITE_TEST_NAME")}
    done = subprocess.run([sys.executable, "-m", "tests.bench.sources", "--objects", str(OBJECTS), "--rounds", "1", "--json", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _check_backend(x: dict[str, Any], vendor: str) -> None:
    assert x["backend"] == vendor and x["objects"] == OBJECTS
    assert x["queries"] == len(QUERIES) and x["searches"] == len(QUERIES)  # one round
    assert 0 < x["p50_ms"] <= x["p95_ms"]
    assert x["precision_at_8"] >= report.SOURCE_PRECISION
    assert x["no_match_correct"] == x["no_match_total"] == sum(1 for _, expected in QUERIES if not expected)


def _check_recorded(result: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--record` into copies of the results file and the README: the table then passes the lint's check, and it
    carries the sources rows and where they come from."""
    latest, readme = tmp_path / "latest.json", tmp_path / "README.md"
    shutil.copy(report.LATEST, latest)
    shutil.copy(report.README, readme)
    monkeypatch.setattr(report, "LATEST", latest)
    monkeypatch.setattr(report, "README", readme)
    assert report.main(["--check"]) == 0
    meta = {"command": "python -m tests.bench.sources --record", "date": "2026-01-01 00:00 UTC", "commit": "abc1234",
            "machine": "test", "duration_s": 1.0, "other_load_cores": 0.0}
    record(result, meta)
    assert report.main(["--check"]) == 0
    text = readme.read_text()
    assert f"Source search at {OBJECTS:,} objects, p50 / p95" in text and "source search: `python -m tests.bench.sources --record`" in text
    stored = json.loads(latest.read_text())
    assert stored["results"]["sources"] == result and stored["meta"]["sources"] == meta
    assert f"## Source search at {OBJECTS:,} objects" in (tmp_path / "latest.md").read_text()
    # the other scenarios' bars are still there, rendered from their own figures
    assert {b["bar"] for b in json.loads(report.LATEST.read_text())["bars"] if not b["bar"].startswith("Source search")} <= {b["bar"] for b in stored["bars"]}


def test_sources_bench_at_a_small_size_on_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _bench("--no-pg")
    assert result["objects"] == OBJECTS and list(result["backends"]) == ["sqlite"]
    _check_backend(result["backends"]["sqlite"], "sqlite")
    (time_bar, precision_bar) = report.source_bars(result)
    assert time_bar[1].startswith("SQLite ") and precision_bar[3] is True
    _check_recorded(result, tmp_path, monkeypatch)


@pytest.mark.services
def test_sources_bench_at_a_small_size_on_both_backends() -> None:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        pytest.skip("DATABASE_URL names no PostgreSQL server")
    result = _bench("--pg", url.rsplit("/", 1)[0])  # a scratch database on the same server, dropped after
    assert list(result["backends"]) == ["sqlite", "postgresql"]
    _check_backend(result["backends"]["sqlite"], "sqlite")
    _check_backend(result["backends"]["postgresql"], "postgresql")
    assert "PostgreSQL " in report.source_bars(result)[0][1]
