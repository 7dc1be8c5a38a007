"""Log levels of the background work (chat.infra.logs): an expected condition logs nothing above DEBUG, a recoverable one
is one WARNING line with its context and no traceback, at most once a minute when it recurs every second.

The doorbell here runs on real channels-redis layers: one whose idle receives end on the client's socket timeout (a
host's layer configured without chat.infra.redis_client.channel_layer_host) and one whose Redis is not there at all."""
from __future__ import annotations

import asyncio
import logging
import os
import uuid
from typing import Any

import pytest

from chat.infra import logs
from chat.infra.logs import Throttled
from chat.runs.doorbell import Doorbell
from tests.conftest import TEST_REDIS_PREFIX
from tests.resilience.cluster import free_port


def _layer(host: Any) -> dict[str, Any]:
    return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                        "CONFIG": {"hosts": [host], "prefix": f"{TEST_REDIS_PREFIX}asgi-{uuid.uuid4().hex[:6]}"}}}


def _loud(caplog: pytest.LogCaptureFixture, logger: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == logger and r.levelno > logging.INFO]


def test_a_recurring_condition_is_one_warning_line_a_minute_and_its_end_one_info_line(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(logs.time, "monotonic", lambda: now[0])
    log = logging.getLogger("chat.test.throttled")
    throttled = Throttled(log, interval=60)
    caplog.set_level(logging.INFO, "chat.test.throttled")
    for _ in range(30):  # every second for half a minute
        throttled.warning("heartbeat failed", exc=ConnectionError("Error 111 connecting to 127.0.0.1:6379."))
        now[0] += 1
    now[0] += 30
    throttled.warning("heartbeat failed", exc=ConnectionError("refused"))
    throttled.recovered("heartbeat: working again")
    throttled.recovered("heartbeat: working again")  # said once
    lines = [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records if r.name == "chat.test.throttled"]
    assert lines == [
        ("WARNING", "heartbeat failed: ConnectionError: Error 111 connecting to 127.0.0.1:6379.", None),
        ("WARNING", "heartbeat failed: ConnectionError: refused (29 more in the last 60 s)", None),
        ("INFO", "heartbeat: working again", None),
    ]


def test_a_recurring_bug_keeps_its_traceback_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("chat.test.throttled")
    throttled = Throttled(log, level=logging.ERROR, traceback=True)
    caplog.set_level(logging.INFO, "chat.test.throttled")
    for _ in range(3):
        try:
            raise TypeError("a bug")
        except TypeError as exc:
            throttled.warning("heartbeat failed", exc=exc)
    records = [r for r in caplog.records if r.name == "chat.test.throttled"]
    assert [(r.levelname, r.getMessage()) for r in records] == [("ERROR", "heartbeat failed")]
    assert records[0].exc_info is not None and records[0].exc_info[0] is TypeError


async def _listening(doorbell: Doorbell, run_id: str) -> list[asyncio.Task[None]]:
    tasks: list[asyncio.Task[None]] = []
    await doorbell.listen(run_id, lambda coro: tasks.append(asyncio.ensure_future(coro)))
    return tasks


@pytest.mark.services
async def test_idle_receives_that_time_out_log_nothing_and_the_doorbell_still_rings(
        settings: Any, caplog: pytest.LogCaptureFixture) -> None:
    if not os.environ.get("REDIS_URL"):
        pytest.skip("needs REDIS_URL")
    # socket timeout 0.3 s under channels-redis's 5 s wait: every idle receive ends in redis-py's TimeoutError
    settings.CHANNEL_LAYERS = _layer({"address": os.environ["REDIS_URL"], "socket_timeout": 0.3})
    caplog.set_level(logging.DEBUG, "chat.runs.doorbell")
    received: list[dict[str, Any]] = []

    async def on_cancel(message: dict[str, Any]) -> None:
        received.append(message)

    doorbell = Doorbell({"run.cancel": on_cancel})
    run_id = str(uuid.uuid4())
    tasks = await _listening(doorbell, run_id)
    try:
        await asyncio.sleep(2)  # six timed-out receives
        await doorbell.ring(run_id, {"type": "run.cancel", "run_id": run_id})
        async with asyncio.timeout(5):
            while not received:
                await asyncio.sleep(0.05)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert received == [{"type": "run.cancel", "run_id": run_id}]
    assert _loud(caplog, "chat.runs.doorbell") == []


async def test_a_layer_whose_redis_is_away_logs_one_warning_line_for_each_condition(
        settings: Any, caplog: pytest.LogCaptureFixture) -> None:
    settings.CHANNEL_LAYERS = _layer(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    caplog.set_level(logging.DEBUG, "chat.runs.doorbell")
    doorbell = Doorbell({})
    tasks = await _listening(doorbell, str(uuid.uuid4()))
    try:
        for _ in range(3):
            await doorbell.listen(str(uuid.uuid4()), lambda coro: tasks.append(asyncio.ensure_future(coro)))
            await doorbell.ring(str(uuid.uuid4()), {"type": "run.cancel"})
        await asyncio.sleep(2)  # the receiver retries every 0.5 s
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    loud = _loud(caplog, "chat.runs.doorbell")
    assert sorted(r.getMessage().split(":", 1)[0].split(" run ")[0] for r in loud) == [
        "channel layer group_send failed for", "could not subscribe to", "run control channel error"], [r.getMessage() for r in loud]
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in loud)
