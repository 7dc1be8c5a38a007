"""What both translations share: reading a run's v1 events, its stored assistant message id, the tool-marker text."""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from chat import selectors, services
from chat.runs import ResyncRequired, manager

TOOL_MARKER = re.compile(r"\n*\[\[tool:\d+\]\]\n*")  # where the tray renders a tool card: meaningless to other clients


async def run_events(*, user: Any, run_id: str) -> AsyncIterator[dict[str, Any]]:
    """The run's v1 events from seq 1 to its terminal one (or the stored terminal event / a resync error)."""
    last = 0  # the last seq yielded: a resync mid-stream must not skip to the stored terminal event
    try:
        async for seq, data in manager.follow(run_id, 0):
            yield json.loads(data)
            last = seq
    except ResyncRequired:
        yield json.loads(await services.run_replay_or_resync(user=user, run_id=run_id, after_seq=last))


async def assistant_message_id(run_id: str) -> str:
    """The id of the run's stored assistant message (stored with the run at admission), as a string."""
    pk = await selectors.run_assistant_message_id(run_id=run_id)
    return str(pk) if pk is not None else f"run-{run_id}"


def client_message_id(value: str) -> str:
    """A client's message id as a v1 client_message_id (1-64 chars): longer ids are hashed, stably."""
    return value if 0 < len(value) <= 64 else hashlib.sha256(value.encode()).hexdigest()


def strip_markers(text: str) -> str:
    """The text without the tray's `[[tool:N]]` markers (a marker is always emitted whole, inside one delta)."""
    return TOOL_MARKER.sub("\n\n", text) if "[[tool:" in text else text
