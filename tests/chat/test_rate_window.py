"""CHAT_RATE_LIMIT_PER_MINUTE holds over any 60 s, not per calendar minute: in one process and through a real Redis
shared by processes, atomically, saying when to retry; a resend's count is given back; Redis down falls back."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat.events.errors import RateLimited
from chat.quotas.limits import Limiter
from tests.conftest import TEST_REDIS_PREFIX

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 8
USER = 7
# 2 s before a calendar minute's end: a counter per minute starts again 2 s later
BEFORE_BOUNDARY = 1_800_000_000 - 1_800_000_000 % 60 + 58.0


class Clock:
    """A wall clock the test moves."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def redis_url(settings: Any) -> str:
    """The real Redis of the services tests, under a key prefix of this test's own."""
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("needs REDIS_URL")
    settings.CHAT_REDIS_URL = url
    settings.CHAT_REDIS_KEY_PREFIX = f"{TEST_REDIS_PREFIX}rate-window-{uuid.uuid4().hex[:8]}:"
    return url


async def _accepted(limiter: Limiter, n: int) -> list[bool | int]:
    """n messages: True when counted, else the refusal's retry_after."""
    out: list[bool | int] = []
    for _ in range(n):
        try:
            await limiter.check_message(USER)
            out.append(True)
        except RateLimited as refused:
            assert refused.retry_after is not None
            out.append(refused.retry_after)
    return out


async def _the_limit_holds_across_a_minute_boundary(first: Limiter, second: Limiter, clock: Clock) -> None:
    """8 messages 2 s before a minute's end, 8 more 13 s later (through another process): the last 60 s hold 8."""
    assert await _accepted(first, LIMIT) == [True] * LIMIT
    clock.now += 13  # 11 s into the next calendar minute
    assert await _accepted(second, LIMIT) == [47] * LIMIT  # the first leaves the window 60 s after it came
    assert await _accepted(first, 1) == [47]
    clock.now += 46.5
    assert await _accepted(second, 1) == [1]  # 0.5 s to go: always a whole second, at least 1
    clock.now += 0.5  # 60 s after the first eight: all of them leave together
    assert await _accepted(second, LIMIT + 1) == [True] * LIMIT + [60]


async def test_in_process_the_limit_holds_over_any_60_seconds(settings: Any) -> None:
    settings.CHAT_REDIS_URL = ""
    settings.CHAT_RATE_LIMIT_PER_MINUTE = LIMIT
    clock = Clock(BEFORE_BOUNDARY)
    limiter = Limiter(clock=clock)
    await _the_limit_holds_across_a_minute_boundary(limiter, limiter, clock)


async def test_in_process_a_resend_gives_its_place_back(settings: Any) -> None:
    settings.CHAT_REDIS_URL = ""
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 2
    clock = Clock(BEFORE_BOUNDARY)
    limiter = Limiter(clock=clock)
    first = await limiter.check_message(USER)
    clock.now += 30
    await limiter.check_message(USER)
    await limiter.uncount_message(USER, first)  # the first started nothing: its place is free at once
    await limiter.check_message(USER)
    with pytest.raises(RateLimited) as refused:
        await limiter.check_message(USER)
    assert refused.value.retry_after == 60  # the second and third came together, just now


@pytest.mark.services
async def test_through_redis_the_limit_holds_over_any_60_seconds_across_processes(redis_url: str, settings: Any) -> None:
    """Two limiters (as two processes) on one Redis, at a minute's boundary: together they accept 8 in any 60 s."""
    settings.CHAT_RATE_LIMIT_PER_MINUTE = LIMIT
    clock = Clock(BEFORE_BOUNDARY)
    await _the_limit_holds_across_a_minute_boundary(Limiter(clock=clock), Limiter(clock=clock), clock)


@pytest.mark.services
async def test_through_redis_a_resend_gives_its_place_back(redis_url: str, settings: Any) -> None:
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 2
    clock = Clock(BEFORE_BOUNDARY)
    one, other = Limiter(clock=clock), Limiter(clock=clock)
    first = await one.check_message(USER)
    await other.check_message(USER)
    with pytest.raises(RateLimited):
        await other.check_message(USER)
    await one.uncount_message(USER, first)
    await other.check_message(USER)  # the given-back place, taken by another process


@pytest.mark.services
async def test_through_redis_concurrent_messages_take_exactly_the_limit(redis_url: str, settings: Any) -> None:
    """80 messages at once over 4 limiters' own connections: exactly 8 counted, every other one refused."""
    settings.CHAT_RATE_LIMIT_PER_MINUTE = LIMIT
    limiters = [Limiter() for _ in range(4)]

    async def one(limiter: Limiter) -> bool:
        try:
            await limiter.check_message(USER)
        except RateLimited:
            return False
        return True

    results = await asyncio.gather(*(one(limiters[i % 4]) for i in range(80)))
    assert results.count(True) == LIMIT


# Each process: wait until all are ready (a Redis counter), then send 25 messages at once; print how many were counted.
_PROCESS = """
import asyncio, sys, time, django
django.setup()
import redis
from chat.events.errors import RateLimited
from chat.quotas.limits import limiter
from chat.infra.redis_client import redis_key

async def main(processes):
    barrier = redis_key("barrier")
    sync = redis.Redis.from_url(sys.argv[1])
    sync.incr(barrier)
    deadline = time.monotonic() + 60
    while int(sync.get(barrier)) < processes and time.monotonic() < deadline:
        time.sleep(0.005)
    async def one():
        try:
            await limiter.check_message(7)
        except RateLimited as refused:
            return refused.retry_after
        return True
    results = await asyncio.gather(*(one() for _ in range(25)))
    print(sum(1 for r in results if r is True), sorted({r for r in results if r is not True}))

asyncio.run(main(int(sys.argv[2])))
"""


@pytest.mark.services
async def test_through_redis_processes_sending_at_once_take_exactly_the_limit(redis_url: str, settings: Any) -> None:
    """Four real processes each send 25 messages at the same moment: 8 are counted in all, the rest say when to retry."""
    processes = 4
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "CHAT_REDIS_URL": redis_url,
           "CHAT_REDIS_KEY_PREFIX": settings.CHAT_REDIS_KEY_PREFIX, "CHAT_RATE_LIMIT_PER_MINUTE": str(LIMIT)}

    def run() -> list[str]:
        procs = [subprocess.Popen([sys.executable, "-c", _PROCESS, redis_url, str(processes)], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(processes)]
        outputs = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outputs.append(out.strip())
        return outputs

    outputs = await sync_to_async(run)()
    counted = [int(out.split(" ", 1)[0]) for out in outputs]
    assert sum(counted) == LIMIT, outputs
    for out in outputs:
        retry = json.loads(out.split(" ", 1)[1])
        assert all(1 <= r <= 60 for r in retry), outputs


async def test_redis_down_falls_back_to_this_process_and_still_limits(settings: Any, caplog: Any) -> None:
    """An unreachable Redis never fails a message: the limit is this process's own window meanwhile."""
    settings.CHAT_REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 2
    clock = Clock(BEFORE_BOUNDARY)
    limiter = Limiter(clock=clock)
    first = await limiter.check_message(USER)
    await limiter.check_message(USER)
    with pytest.raises(RateLimited) as refused:
        await limiter.check_message(USER)
    assert refused.value.retry_after == 60
    assert "Redis unavailable, counting in this process" in caplog.text
    await limiter.uncount_message(USER, first)
    await limiter.check_message(USER)
