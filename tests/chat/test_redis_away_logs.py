"""Redis away is a recoverable condition every message, turn and heartbeat meets again: the rate limiter, the socket
limiter and the budgets each write one WARNING line (no traceback) and go on in-process, not one line per call."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from chat.quotas.budgets import Budgets
from chat.quotas.limits import Limiter
from tests.resilience.cluster import free_port

pytestmark = pytest.mark.django_db(transaction=True)


async def test_every_limit_says_once_that_redis_is_away(settings: Any, caplog: pytest.LogCaptureFixture) -> None:
    settings.CHAT_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there: every call fails at once
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1000
    settings.CHAT_DAILY_TOKEN_BUDGET = 1_000_000
    limiter, budgets = Limiter(), Budgets()
    caplog.set_level(logging.INFO)
    for i in range(20):
        await limiter.check_message(7)  # counted in this process: accepted
        assert await limiter.socket_acquire(7, f"s{i}")
        await limiter.refresh()
        await budgets.check(7)  # summed from the database
        await budgets.spend(7, {"input_tokens": 1, "output_tokens": 1}, None)
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert sorted(r.getMessage().split(":")[0] for r in loud) == [
        "budgets", "budgets", "rate limiter", "socket limiter", "socket limiter"], [r.getMessage() for r in loud]
    assert all(r.exc_info is None and "Error" in r.getMessage() for r in loud), [r.getMessage() for r in loud]  # why, without a traceback
