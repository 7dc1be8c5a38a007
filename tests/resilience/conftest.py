"""Resilience battery: its figures (trials, events checked, losses) are reported at the end of the session by
tests/conftest.py, summed over pytest-xdist's workers."""
from __future__ import annotations

import os

import pytest


@pytest.fixture
def seed() -> int:
    """The RNG seed of randomised trials (RESILIENCE_SEED to replay a failure)."""
    value = int(os.environ.get("RESILIENCE_SEED", "20261107"))
    print(f"RESILIENCE_SEED={value}")
    return value
