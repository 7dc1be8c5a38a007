"""Resilience battery: report the figures (trials, events checked, losses) at the end of the session."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.resilience.invariants import FIGURES

ROOT = Path(__file__).resolve().parents[2]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not sum(FIGURES.trials.values()) and not FIGURES.events_checked:
        return
    terminalreporter.write_sep("-", "resilience")
    terminalreporter.write_line(FIGURES.summary())
    out = ROOT / "artifacts" / f"resilience-figures{'-services' if os.environ.get('REDIS_URL') or os.environ.get('DATABASE_URL') else ''}.json"
    try:
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(FIGURES.as_dict(), indent=2))
    except OSError:
        pass


@pytest.fixture
def seed() -> int:
    """The RNG seed of randomised trials (RESILIENCE_SEED to replay a failure)."""
    value = int(os.environ.get("RESILIENCE_SEED", "20261107"))
    print(f"RESILIENCE_SEED={value}")
    return value
