"""The run-log backend is chosen by CHAT_RUN_LOG_BACKEND (default: Redis Streams when a Redis URL is set)."""
from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from chat.events import CancelledEvent, Envelope, ErrorEvent, StatusEvent
from chat.runs.log import MemoryRunLog, RedisRunLog, is_terminal, run_log_from_settings
from chat.runs.manager import RunManager


def test_the_backend_follows_the_settings(settings: Any) -> None:
    settings.CHAT_REDIS_URL = ""
    assert type(run_log_from_settings()) is MemoryRunLog
    settings.CHAT_RUN_LOG_BACKEND = "tests.chat.runs.test_handle.RecordingLog"
    assert type(run_log_from_settings()).__name__ == "RecordingLog"
    settings.CHAT_RUN_LOG_BACKEND = "redis"
    settings.CHAT_REDIS_URL = "redis://127.0.0.1:1/0"  # never connected to: the client connects lazily
    assert type(run_log_from_settings()) is RedisRunLog


async def test_a_manager_gives_its_handles_the_configured_log(settings: Any) -> None:
    settings.CHAT_RUN_LOG_BACKEND = "tests.chat.runs.test_handle.RecordingLog"
    manager = RunManager()
    handle = manager.create("r", 1, 1)
    assert handle.shared and manager.shared_log() is manager.run_log()


def test_terminal_frames_are_known_by_their_first_bytes() -> None:
    env = Envelope("r", 1)
    assert is_terminal(CancelledEvent.wire(env, 2)) and is_terminal(ErrorEvent.wire(env, 2, code="internal"))
    assert not is_terminal(StatusEvent.wire(env, 1, message='"type":"complete"'))


@pytest.mark.services
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
async def test_redis_streams_append_close_and_follow() -> None:
    log = RedisRunLog(os.environ["REDIS_URL"], 60)
    run_id = f"test-{uuid.uuid4()}"
    env = Envelope(run_id, 1)
    try:
        events = [StatusEvent.wire(env, 1, message="a"), StatusEvent.wire(env, 2, message="b")]
        assert await log.append(run_id, 1, events, terminal=False)
        assert await log.append(run_id, 2, events[1:], terminal=False)  # a retried write adds nothing
        assert not await log.append(run_id, 5, events, terminal=False)  # a hole: rewrite needed
        before, after = env.around_seq(ErrorEvent.wire(env, 0, code="interrupted"))
        assert await log.close_stream(run_id, before, after) == 3
        assert await log.close_stream(run_id, before, after) == 0  # already ended

        async def gone(run_id: str, missing_for: float | None) -> Any:
            return "gone"

        got = [(seq, data) async for seq, data in log.follow(run_id, 0, settle=gone)]
        assert [s for s, _ in got] == [1, 2, 3] and got[2][1] == ErrorEvent.wire(env, 3, code="interrupted")
        assert await log.lengths([run_id]) == [3]
    finally:
        await log.redis.delete(log.key(run_id))
        await log.close()
