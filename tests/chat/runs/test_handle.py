"""RunHandle: gapless seqs, one terminal event, followers, and the in-order copy to a shared run log."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chat.events import CancelledEvent, StatusEvent, TextDeltaEvent
from chat.runs import RunHandle
from chat.runs.log import MemoryRunLog, ResyncRequired, RunLog, Settle
from tests.protocol import check_wire


class RecordingLog(RunLog):
    """A shared run log kept in a dict, failing the first `fail` appends (a store that is down)."""

    def __init__(self, fail: int = 0) -> None:
        self.entries: dict[str, list[str]] = {}
        self.fail = fail

    async def append(self, run_id: str, first_seq: int, events: list[str], *, terminal: bool) -> bool:
        if self.fail:
            self.fail -= 1
            raise ConnectionError("down")
        log = self.entries.setdefault(run_id, [])
        if len(log) < first_seq - 1:
            return False
        log[first_seq - 1:] = events
        return True

    async def rewrite(self, run_id: str, events: list[str], *, terminal: bool, first_seq: int = 1) -> None:
        self.entries[run_id] = list(events)

    async def close_stream(self, run_id: str, before_seq: str, after_seq: str) -> int:
        return -1

    async def lengths(self, run_ids: list[str]) -> list[int]:
        return [len(self.entries.get(r, [])) for r in run_ids]

    async def request_cancel(self, run_id: str) -> None:
        return None

    async def cancel_requested(self, run_ids: list[str]) -> list[str]:
        return []

    async def follow(self, run_id: str, after_seq: int, *, settle: Settle) -> AsyncIterator[tuple[int, str]]:
        for seq, data in enumerate(self.entries.get(run_id, []), start=1):
            if seq > after_seq:
                yield seq, data


async def test_events_get_gapless_seqs_and_the_terminal_one_ends_the_run() -> None:
    handle = RunHandle("run-1", 5, 1)
    assert handle.append(StatusEvent.wire, message="Thinking…") == 1
    assert handle.append(TextDeltaEvent.wire, text="hi") == 2
    assert handle.end(CancelledEvent.wire) == 3
    assert handle.done and [check_wire(e)["seq"] for e in handle.events] == [1, 2, 3]
    with pytest.raises(RuntimeError):
        handle.append(TextDeltaEvent.wire, text="late")
    assert [seq async for seq, _ in handle.follow(1)] == [2, 3]


async def test_followers_get_live_events_and_leaving_does_not_hurt_the_others() -> None:
    handle = RunHandle("run-2", 5, 1)
    seen: list[int] = []

    async def follow() -> None:
        async for seq, _ in handle.follow(0):
            seen.append(seq)

    keep, leave = asyncio.create_task(follow()), asyncio.create_task(follow())
    await asyncio.sleep(0)
    handle.append(StatusEvent.wire, message="a")
    await asyncio.sleep(0.05)
    assert seen == [1, 1]
    leave.cancel()
    handle.append(TextDeltaEvent.wire, text="b")
    handle.end(CancelledEvent.wire)
    await asyncio.wait_for(keep, 1)
    assert seen == [1, 1, 2, 3]


async def test_a_shared_log_gets_every_event_in_order_even_after_failures() -> None:
    shared = RecordingLog(fail=2)
    handle = RunHandle("run-3", 5, 1, shared)
    for i in range(20):
        handle.append(TextDeltaEvent.wire, text=str(i))
    handle.end(CancelledEvent.wire)
    assert await handle.wait_durable(21, timeout=5)
    assert shared.entries["run-3"] == handle.events
    assert [json.loads(e)["seq"] for e in shared.entries["run-3"]] == list(range(1, 22))


async def test_a_lost_shared_copy_is_written_again_whole() -> None:
    shared = RecordingLog()
    handle = RunHandle("run-4", 5, 1, shared)
    handle.append(StatusEvent.wire, message="a")
    assert await handle.wait_durable(1, timeout=5)
    shared.entries.clear()  # Redis restarted
    assert handle.needs_check(0.0) and await shared.lengths(["run-4"]) == [0]
    handle.request_rewrite()
    handle.end(CancelledEvent.wire)
    assert await handle.wait_durable(2, timeout=5)
    assert shared.entries["run-4"] == handle.events


async def test_the_memory_backend_keeps_nothing_to_share() -> None:
    handle = RunHandle("run-5", 5, 1, MemoryRunLog())
    assert not handle.shared and handle.writer is None
    handle.append(StatusEvent.wire, message="a")
    assert handle.durable_seq == 1 and handle.writer is None
    with pytest.raises(ResyncRequired):
        async for _ in MemoryRunLog().follow("run-5", 0, settle=_never):
            pass


async def _never(run_id: str, missing_for: float | None) -> Any:
    raise AssertionError("not asked")


# ---- memory bounds -------------------------------------------------------------------------------


async def test_a_run_holds_at_most_its_bound_of_events_and_a_lagging_follower_resyncs() -> None:
    handle = RunHandle("run-6", 5, 1, max_events=10)
    handle.append(StatusEvent.wire, message="a")
    lagging = handle.follow(0)
    assert await anext(lagging) == (1, handle.events[0])
    for i in range(40):
        handle.append(TextDeltaEvent.wire, text=str(i))
    assert len(handle.events) <= 10 and handle.last_seq == 41 and handle.base == 41 - len(handle.events)
    assert handle.bytes == sum(len(e) for e in handle.events)
    assert [json.loads(e)["seq"] for e in handle.events] == list(range(handle.base + 1, 42))
    with pytest.raises(ResyncRequired):  # it still needs seq 2, which is gone
        await anext(lagging)
    with pytest.raises(ResyncRequired):
        async for _ in handle.follow(0):
            pass
    handle.end(CancelledEvent.wire)
    assert [seq async for seq, _ in handle.follow(39)] == [40, 41, 42]  # a follower near the end is unaffected


async def test_a_run_holds_at_most_its_bound_of_bytes() -> None:
    handle = RunHandle("run-7", 5, 1, max_bytes=5000)
    for _ in range(200):
        handle.append(TextDeltaEvent.wire, text="x" * 100)
        assert handle.bytes <= 5000
    assert handle.last_seq == 200 and handle.events[-1] and json.loads(handle.events[-1])["seq"] == 200


async def test_events_not_yet_in_the_shared_log_are_never_released() -> None:
    shared = RecordingLog(fail=10**6)  # the store is down: nothing is written
    handle = RunHandle("run-8", 5, 1, shared, max_events=10)
    for i in range(30):
        handle.append(TextDeltaEvent.wire, text=str(i))
    assert len(handle.events) == 30 and handle.base == 0  # over the bound, but only memory has them
    shared.fail = 0
    assert await handle.wait_durable(30, timeout=5)
    handle.append(TextDeltaEvent.wire, text="next")
    assert len(handle.events) <= 10 and shared.entries["run-8"][-1] == handle.events[-2]
    handle.end(CancelledEvent.wire)
    assert await handle.wait_durable(32, timeout=5)
    assert [json.loads(e)["seq"] for e in shared.entries["run-8"]] == list(range(1, 33))  # the log has them all
