"""The websocket transport through the real ASGI app: protocol v1, persistence, faults, bad frames."""
from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async

from chat.models import Message, Run, ToolCall
from chat.providers import scripted as s
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "text_delta")


def assert_gapless(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events if "seq" in e]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert sum(e["type"] in ("complete", "cancelled", "error") for e in events if "seq" in e) == 1


async def test_offline_model_tool_round_trip_is_streamed_and_persisted(user: Any) -> None:
    ws, _ = await ws_connect(user)
    await ws.chat("please calculate 12 * 7 for me")
    events = await ws.until_terminal()
    types = [e["type"] for e in events]
    assert types[0] == "status"
    assert "tool_start" in types and "tool_complete" in types and types[-1] == "complete"
    assert_gapless(events)
    start = next(e for e in events if e["type"] == "tool_start")
    assert start["tool"] == "calculate" and start["input"] == {"expression": "12 * 7"}
    streamed = texts(events)
    assert "[[tool:0]]" in streamed and "Offline model" not in streamed  # the tray badge names the model, not every reply
    payload = events[-1]["payload"]
    assert payload["message"] == streamed
    assert payload["tool_history"][0]["output"] == "12 * 7 = 84"
    assert "diagnostics" not in payload  # staff only
    run = await Run.objects.select_related("assistant_message").aget(pk=payload["run_id"])
    assert run.status == "completed" and run.assistant_message.content == streamed
    assert run.diagnostics["system_prompt"].startswith("# IDENTITY")
    assert await ToolCall.objects.filter(run=run, name="calculate").acount() == 1
    assert await Message.objects.filter(conversation_id=payload["conversation_id"]).acount() == 2
    await ws.close()


async def test_scripted_turn_events_and_staff_diagnostics(staff_user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("Hello ", "there"))
    ws, _ = await ws_connect(staff_user)
    await ws.chat("hi", context={"current_page": "home"})
    events = await ws.until_terminal()
    assert texts(events) == "Hello there"
    complete = events[-1]
    assert complete["payload"]["diagnostics"]["model"]
    assert complete["run_id"] and complete["conversation_id"] == complete["payload"]["conversation_id"]
    await ws.close()


async def test_second_turn_sees_history(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("first answer"), s.text("second answer"))
    ws, _ = await ws_connect(user)
    await ws.chat("one")
    conv = (await ws.until_terminal())[-1]["conversation_id"]
    await ws.chat("two", conversation_id=conv)
    await ws.until_terminal()
    sent = scripted.requests[1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"] == "one" and sent[-1]["content"] == "two"
    await ws.close()


async def test_a_plain_answer_is_stored_once_and_sent_back_as_the_same_block(user: Any, scripted: Any) -> None:
    from asgiref.sync import sync_to_async

    from chat.models import Message

    marked = 'Pick one.\nSUGGESTED_VALUES: [{"label": "A", "value": "a"}]'
    scripted.enqueue(s.text("first ", "answer"), s.text(marked), s.text("third"))
    ws, _ = await ws_connect(user)
    await ws.chat("one")
    conv = (await ws.until_terminal())[-1]["conversation_id"]
    await ws.chat("two", conversation_id=conv)
    await ws.until_terminal()
    await ws.chat("three", conversation_id=conv)
    await ws.until_terminal()
    stored = await sync_to_async(lambda: list(Message.objects.filter(conversation_id=conv, role="assistant").order_by("id")
                                              .values_list("content", "provider_messages")))()
    # the plain answer keeps its text once; the one whose text differs from what the model said (the chips' line
    # was taken out of it) keeps the model's own words
    assert stored[0] == ("first answer", [])
    assert stored[1][0].strip() == "Pick one." and stored[1][1] == [{"role": "assistant", "content": [{"type": "text", "text": marked}]}]
    sent = scripted.requests[2].messages
    assert sent[1] == {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]}  # as the model gave it
    assert sent[3] == {"role": "assistant", "content": [{"type": "text", "text": marked}]}
    await ws.close()


async def test_cancel_mid_stream_saves_partial(user: Any, scripted: Any) -> None:
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("partial "), s.TextDelta("text"), gate])
    ws, _ = await ws_connect(user)
    await ws.chat("go")
    first = await ws.recv()
    assert first["type"] == "status"
    got = [first]
    while texts(got) != "partial text":
        got.append(await ws.recv())
    await ws.send({"type": "chat.cancel", "run_id": first["run_id"]})
    got += await ws.until_terminal()
    assert got[-1]["type"] == "cancelled"
    assert_gapless(got)
    run = await Run.objects.select_related("assistant_message").aget(pk=first["run_id"])
    assert run.status == "cancelled"
    assert run.assistant_message.content == "partial text" and run.assistant_message.status == "cancelled"
    await ws.close()


async def test_a_send_skips_recycling_djangos_connections_and_other_frames_keep_it(user: Any, scripted: Any, monkeypatch: Any) -> None:
    # Channels hops to Django's sync thread before every message to recycle its connections; a send's database
    # work runs on threads that recycle their own, so it skips the hop, and every other frame keeps it
    recycled: list[str] = []

    async def recycle() -> None:
        recycled.append("hop")

    monkeypatch.setattr("chat.api.consumer.aclose_old_connections", recycle)
    monkeypatch.setattr("channels.consumer.aclose_old_connections", recycle)  # where Channels' own dispatch calls it
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("partial"), gate])
    ws, _ = await ws_connect(user)
    assert recycled == ["hop"]  # the connect, as Channels does it
    recycled.clear()
    await ws.chat("go")
    first = await ws.recv()
    got = [first]
    while texts(got) != "partial":
        got.append(await ws.recv())
    assert recycled == []
    await ws.send({"type": "chat.cancel", "run_id": first["run_id"]})
    got += await ws.until_terminal()
    assert got[-1]["type"] == "cancelled" and recycled == ["hop"]
    await ws.close()


async def test_disconnect_mid_stream_run_completes_and_resume_replays(user: Any, scripted: Any) -> None:
    scripted.enqueue([s.TextDelta("a"), 0.05, s.TextDelta("b"), 0.05, s.TextDelta("c")])
    ws, _ = await ws_connect(user)
    await ws.chat("go")
    first = await ws.recv()
    await ws.close()  # the run belongs to the process, not the socket
    await asyncio.sleep(0.4)
    run = await Run.objects.select_related("assistant_message").aget(pk=first["run_id"])
    assert run.status == "completed" and run.assistant_message.content == "abc"
    ws2, _ = await ws_connect(user)
    await ws2.send({"type": "chat.resume", "run_id": first["run_id"], "after_seq": 1})
    rest = await ws2.until_terminal()
    assert [e["seq"] for e in rest] == list(range(2, 2 + len(rest)))
    assert texts(rest) == "abc"
    await ws2.close()


async def test_busy_while_running(user: Any, scripted: Any) -> None:
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("x"), gate], s.text("later"))
    ws, _ = await ws_connect(user)
    await ws.chat("first")
    first = await ws.recv()
    await ws.chat("second", conversation_id=first["conversation_id"])
    while True:
        ev = await ws.recv()
        if ev["type"] == "error" and "seq" not in ev:
            break
    assert ev["code"] == "busy"
    gate.set()
    await ws.until_terminal()
    assert await Message.objects.filter(conversation_id=first["conversation_id"], role="user").acount() == 1
    await ws.close()


async def test_idempotent_resend_starts_nothing_new(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("only once"))
    ws, _ = await ws_connect(user)
    cmid = await ws.chat("hello")
    events = await ws.until_terminal()
    await ws.chat("hello", client_message_id=cmid, conversation_id=events[-1]["conversation_id"])
    replay = await ws.until_terminal()
    assert replay == events  # same run, same events, same seqs
    assert await Run.objects.acount() == 1 and await Message.objects.filter(role="user").acount() == 1
    await ws.chat("hello", client_message_id=cmid)  # also without the conversation id
    assert (await ws.until_terminal())[-1]["run_id"] == events[-1]["run_id"]
    await ws.close()


@pytest.mark.parametrize("limit", [1, 4])
async def test_a_resend_while_its_run_runs_follows_that_run(user: Any, scripted: Any, settings: Any, limit: int) -> None:
    """A reconnect resending a follow-up (same client_message_id) while its run still runs: that run again - not
    `rate_limited` when it fills the user's running limit, not `busy`, and nothing stored twice."""
    settings.CHAT_MAX_RUNNING_PER_USER = limit
    gate = asyncio.Event()
    scripted.enqueue(s.text("first answer"), [s.TextDelta("x"), gate])
    ws, _ = await ws_connect(user)
    await ws.chat("first")
    conversation_id = (await ws.until_terminal())[-1]["conversation_id"]
    cmid = await ws.chat("second", conversation_id=conversation_id)
    ack = await ws.recv()
    ws2, _ = await ws_connect(user)
    await ws2.chat("second", client_message_id=cmid, conversation_id=conversation_id)
    again = await ws2.recv()
    assert "seq" in again and again["run_id"] == ack["run_id"], again
    gate.set()
    await ws.until_terminal()
    await ws2.until_terminal()
    assert await Message.objects.filter(conversation_id=conversation_id, role="user").acount() == 2
    assert await Run.objects.filter(conversation_id=conversation_id).acount() == 2
    await ws.close()
    await ws2.close()


async def test_someone_elses_ids_look_missing(user: Any, other_user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("secret of bob"))
    bob, _ = await ws_connect(other_user)
    await bob.chat("mine")
    bob_events = await bob.until_terminal()
    conv, run_id = bob_events[-1]["conversation_id"], bob_events[-1]["run_id"]
    ann, _ = await ws_connect(user)
    answers = []
    await ann.chat("let me in", conversation_id=conv)
    answers.append(await ann.recv())
    await ann.chat("missing", conversation_id=999999)
    answers.append(await ann.recv())
    await ann.send({"type": "chat.resume", "run_id": run_id, "after_seq": 0})
    answers.append(await ann.recv())
    await ann.send({"type": "chat.resume", "run_id": str(uuid.uuid4()), "after_seq": 0})
    answers.append(await ann.recv())
    await ann.send({"type": "chat.cancel", "run_id": run_id})
    answers.append(await ann.recv())
    assert [a["code"] for a in answers] == ["not_found"] * 5
    assert answers[0]["message"] == answers[1]["message"] and answers[2]["message"] == answers[3]["message"]
    assert "secret" not in json.dumps(answers)
    await ann.close()
    await bob.close()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "bad_json"),
        ("[1, 2]", "bad_frame"),
        ('{"type": "chat.nope"}', "unknown_type"),
        ('{"type": "websocket.disconnect"}', "unknown_type"),
        ('{"no": "type"}', "unknown_type"),
        ('{"type": "chat.send", "client_message_id": "", "message": "x"}', "bad_frame"),
        ('{"type": "chat.resume", "run_id": "r", "after_seq": -1}', "bad_frame"),
        ('{"type": "chat.send", "client_message_id": "a", "message": "x", "extra": 1}', "bad_frame"),
        ('{"type": "chat.send", "client_message_id": "a", "message": "\\ud800"}', "bad_frame"),
        ('{"type": "chat.send", "client_message_id": "a", "message": "nul\\u0000"}', "bad_frame"),
        ("[" * 5000 + "]" * 5000, "bad_frame"),
        ('{"type": "chat.send", "message": "' + "x" * 70000 + '"}', "too_large"),
    ],
)
async def test_bad_frames_get_an_error_and_the_socket_stays_open(user: Any, scripted: Any, frame: str, code: str) -> None:
    ws, _ = await ws_connect(user)
    await ws.send(frame)
    err = await ws.recv()
    assert err["type"] == "error" and err["code"] == code and "seq" not in err
    scripted.enqueue(s.text("still here"))
    await ws.chat("after the bad frame")
    assert (await ws.until_terminal())[-1]["type"] == "complete"
    assert await Message.objects.filter(role="user").acount() == 1
    await ws.close()


async def test_handshake_auth(user: Any) -> None:
    from django.test import AsyncClient

    ws, _ = await ws_connect(None)
    assert ws is None  # no token, no cookie, no origin
    ws, _ = await ws_connect(None, token="not-a-token")
    assert ws is None
    client = AsyncClient()
    await database_sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    for origin in (b"http://evil.example", b"null", None):
        headers = [(b"cookie", cookie)] + ([(b"origin", origin)] if origin else [])
        ws, _ = await ws_connect(None, headers=headers)
        assert ws is None, origin
    ws, _ = await ws_connect(None, headers=[(b"cookie", cookie), (b"origin", b"http://testserver")])
    assert ws is not None
    await ws.close()


async def test_unknown_stateless_history_is_used_for_a_new_conversation(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("ok"))
    ws, _ = await ws_connect(user)
    await ws.chat("and now?", conversation_history=[{"role": "user", "content": "earlier q"}, {"role": "assistant", "content": "earlier a"}])
    await ws.until_terminal()
    assert [m["content"] for m in scripted.requests[0].messages] == ["earlier q", "earlier a", "and now?"]
    await ws.close()


def _follow_losing_the_log_after(n: int) -> Any:
    """manager.follow as if the run's log vanished (a Redis restart) after `n` events had been delivered."""
    from chat.runs import manager
    from chat.runs.log import ResyncRequired

    real = manager.follow

    async def follow(run_id: str, after_seq: int) -> Any:
        delivered = 0
        async for item in real(run_id, after_seq):
            if delivered == n:
                raise ResyncRequired()
            yield item
            delivered += 1
        raise ResyncRequired()

    return follow


async def test_a_log_lost_mid_stream_is_a_resync_not_a_jump_to_the_stored_answer(user: Any, scripted: Any, monkeypatch: Any) -> None:
    from chat.runs import manager

    ws, _ = await ws_connect(user)
    scripted.enqueue(s.text("one ", "two ", "three"))
    await ws.chat("hi")
    done = await ws.until_terminal()
    run_id = done[-1]["run_id"]
    monkeypatch.setattr(manager, "follow", _follow_losing_the_log_after(2))
    await ws.send({"type": "chat.resume", "run_id": run_id, "after_seq": 0})
    got = [await ws.recv() for _ in range(3)]
    assert [e.get("seq") for e in got[:2]] == [1, 2]
    # the follower has seq 2: the stored terminal event would hide the events between (a silent gap)
    assert got[2]["type"] == "error" and got[2]["code"] == "resync" and got[2]["run_id"] == run_id
    # a follower that got nothing yet still gets the stored terminal event
    monkeypatch.setattr(manager, "follow", _follow_losing_the_log_after(0))
    await ws.send({"type": "chat.resume", "run_id": run_id, "after_seq": 0})
    assert (await ws.recv())["type"] == "complete"
