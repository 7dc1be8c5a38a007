"""The run-log backend is chosen by CHAT_RUN_LOG_BACKEND (default: Redis Streams when a Redis URL is set)."""
from __future__ import annotations

import asyncio
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


async def _finish(manager: RunManager, run_id: str, n: int) -> None:
    handle = manager.create(run_id, 1, 1)

    async def work() -> None:
        for i in range(n):
            handle.append(StatusEvent.wire, message="x" * 100 + str(i))
        handle.end(CancelledEvent.wire)

    await manager.start(handle, work())


async def test_a_process_lets_go_of_finished_runs_oldest_first_beyond_its_bound(settings: Any) -> None:
    settings.CHAT_REDIS_URL = ""
    settings.CHAT_PROCESS_MEMORY_MAX_BYTES = 50_000
    manager = RunManager()
    for i in range(10):
        await _finish(manager, f"r{i}", 100)  # ~16 KB of events each
    assert manager.held_bytes() <= 50_000
    assert "r9" in manager.handles and "r0" not in manager.handles
    kept = sorted(manager.handles)
    assert kept == [f"r{i}" for i in range(10 - len(kept), 10)]  # the newest ones


async def test_with_a_shared_log_a_finished_run_is_let_go_once_the_log_holds_it(settings: Any) -> None:
    settings.CHAT_RUN_LOG_BACKEND = "tests.chat.runs.test_handle.RecordingLog"
    manager = RunManager()
    await _finish(manager, "r-shared", 50)
    for _ in range(50):
        if "r-shared" not in manager.handles:
            break
        await asyncio.sleep(0.01)
    assert "r-shared" not in manager.handles and manager.held_bytes() == 0
    # a new follower reads the shared log: every event, in order
    got = [seq async for seq, _ in manager.follow("r-shared", 0)]
    assert got == list(range(1, 52))


async def test_the_held_size_follows_runs_as_they_start_finish_and_are_let_go(settings: Any) -> None:
    """held_bytes is kept as runs go (not summed over every retained run): it always equals the sum it stands for."""
    settings.CHAT_REDIS_URL = ""
    settings.CHAT_PROCESS_MEMORY_MAX_BYTES = 50_000
    manager = RunManager()

    def actual() -> int:
        return sum(h.bytes for h in manager.handles.values())

    for i in range(10):  # the bound lets the oldest go as new ones finish
        await _finish(manager, f"r{i}", 100)
        assert manager.held_bytes() == actual()
    assert "r0" not in manager.handles
    live = manager.create("live", 1, 1)
    for _ in range(20):
        live.append(StatusEvent.wire, message="y" * 500)
    assert manager.held_bytes() == actual() > live.bytes
    settings.CHAT_PROCESS_MEMORY_MAX_BYTES = 1_000  # finished runs go first, then the live run's older events
    manager.bound_memory()
    assert list(manager.handles) == ["live"] and manager.held_bytes() == actual() == live.bytes < 1_000
    await _finish(manager, "after", 1)
    assert manager.held_bytes() == actual()
    manager.clear()
    assert manager.held_bytes() == 0 and not manager.handles
