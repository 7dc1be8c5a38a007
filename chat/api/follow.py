"""Following a run for every transport: its events after a seq, and the replay when the log lost the gap."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from chat import services
from chat.runs import ResyncRequired, manager


async def run_follow(*, user: Any, run_id: str, after_seq: int) -> AsyncIterator[tuple[int | None, str]]:
    """The run's events after `after_seq` as (seq, event JSON) up to its terminal one; when the log can no longer
    replay the gap (ResyncRequired), one last (None, JSON): the stored terminal event or a resync error."""
    last = after_seq  # the last seq yielded: a resync mid-stream must not skip to the stored terminal event
    try:
        async for seq, data in manager.follow(run_id, after_seq):
            yield seq, data
            last = seq
    except ResyncRequired:
        yield None, await services.run_replay_or_resync(user=user, run_id=run_id, after_seq=last)
