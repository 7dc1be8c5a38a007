"""The one follow-and-resync loop of every transport (chat.api.follow): a lost log never skips to the stored answer."""
from __future__ import annotations

import json
from typing import Any

import pytest

from chat.api.follow import run_follow
from chat.api.interop.common import run_events
from chat.providers import scripted as s
from chat.runs import manager
from tests.chat.test_consumer import _follow_losing_the_log_after
from tests.chat.test_http import TokenClient, auth_headers, parse_sse

pytestmark = pytest.mark.django_db(transaction=True)


async def _finished_run(user: Any, scripted: Any) -> str:
    """A run that streamed "one two three" to its end over SSE; its id."""
    scripted.enqueue(s.text("one ", "two ", "three"))
    client = TokenClient(await auth_headers(user))
    response = await client.post("/api/chat/stream", {"client_message_id": "follow1", "message": "hi"}, content_type="application/json")
    events = parse_sse([c async for c in response.streaming_content])
    assert events[-1][1]["type"] == "complete"
    return str(events[0][1]["run_id"])


async def test_a_log_lost_mid_stream_ends_with_a_resync_after_the_last_seq(user: Any, scripted: Any, monkeypatch: Any) -> None:
    run_id = await _finished_run(user, scripted)
    monkeypatch.setattr(manager, "follow", _follow_losing_the_log_after(2))
    got = [item async for item in run_follow(user=user, run_id=run_id, after_seq=0)]
    assert [seq for seq, _ in got] == [1, 2, None]
    last = json.loads(got[2][1])
    assert last["type"] == "error" and last["code"] == "resync" and last["run_id"] == run_id


async def test_a_log_lost_before_the_first_event_gives_the_stored_terminal_event(user: Any, scripted: Any, monkeypatch: Any) -> None:
    run_id = await _finished_run(user, scripted)
    monkeypatch.setattr(manager, "follow", _follow_losing_the_log_after(0))
    got = [item async for item in run_follow(user=user, run_id=run_id, after_seq=0)]
    assert len(got) == 1 and got[0][0] is None and json.loads(got[0][1])["type"] == "complete"


async def test_the_standard_clients_read_the_same_loop(user: Any, scripted: Any, monkeypatch: Any) -> None:
    run_id = await _finished_run(user, scripted)
    monkeypatch.setattr(manager, "follow", _follow_losing_the_log_after(2))
    got = [event async for event in run_events(user=user, run_id=run_id)]
    assert [e.get("seq") for e in got[:2]] == [1, 2]
    assert got[2]["type"] == "error" and got[2]["code"] == "resync" and len(got) == 3
