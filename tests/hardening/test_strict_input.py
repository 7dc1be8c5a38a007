"""Client frames and HTTP bodies are read strictly: NaN/Infinity are bad JSON, no type coercion, only the
running-run constraint is `busy`, oversized or malformed bodies get the JSON error envelope."""
from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import IntegrityError
from django.test import AsyncClient

from chat.events import ChatSend, FrameError, parse_frame
from chat.events.errors import Busy
from chat.models import Conversation, Message, Run
from chat.providers import scripted as s
from chat.turns import admission
from chat.turns.clients import NO_EXTRAS
from tests.conftest import token_for, ws_connect
from tests.protocol import check_http

pytestmark = pytest.mark.django_db(transaction=True)


def send(**fields: Any) -> dict[str, Any]:
    return {"type": "chat.send", "client_message_id": str(uuid.uuid4()), "conversation_id": None, "message": "hi",
            "context": {}, **fields}


async def next_frame_error(ws: Any) -> dict[str, Any]:
    while True:
        ev = await ws.recv()
        if ev["type"] == "error" and "seq" not in ev:
            return ev


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_nan_and_infinity_are_bad_json_not_busy(user: Any, scripted: Any, constant: str) -> None:
    ws, _ = await ws_connect(user)
    frame = json.dumps(send(context={"x": 1.5})).replace("1.5", constant)
    await ws.send(frame)
    err = await next_frame_error(ws)
    assert err["code"] == "bad_json", err
    assert await Message.objects.acount() == 0  # nothing stored
    scripted.enqueue(s.text("still fine"))
    await ws.chat("after that")  # the socket keeps working
    assert (await ws.until_terminal())[-1]["type"] == "complete"
    await ws.close()


@pytest.mark.parametrize(("frame", "field"), [
    (send(conversation_id=True), "conversation_id"),
    (send(conversation_id="1"), "conversation_id"),
    (send(conversation_id=1.0), "conversation_id"),
    (send(message=5), "message"),
    ({"type": "chat.approve", "run_id": "r", "tool_use_id": "t", "approved": "yes"}, "approved"),
    ({"type": "chat.approve", "run_id": "r", "tool_use_id": "t", "approved": 1}, "approved"),
    ({"type": "chat.resume", "run_id": "r", "after_seq": "3"}, "after_seq"),
    ({"type": "chat.resume", "run_id": "r", "after_seq": True}, "after_seq"),
    (send(conversation_history=[{"role": "user", "content": 7}]), "conversation_history"),
])
def test_client_frames_are_not_coerced(frame: dict[str, Any], field: str) -> None:
    parsed = parse_frame(json.dumps(frame), 65536)
    assert isinstance(parsed, FrameError) and parsed.code == "bad_frame", parsed
    assert field in parsed.message


def test_valid_frames_still_parse() -> None:
    parsed = parse_frame(json.dumps(send(conversation_id=3, conversation_history=[{"role": "user", "content": "x"}],
                                         action_metadata={"action_identifier": "a", "action_data": {"k": [1, 2.5]}})), 65536)
    assert isinstance(parsed, ChatSend) and parsed.conversation_id == 3


async def test_coerced_conversation_id_over_the_socket_is_refused(user: Any, scripted: Any) -> None:
    await Conversation.objects.acreate(owner=user, title="mine")  # `true` would have been this conversation
    ws, _ = await ws_connect(user)
    await ws.send(send(conversation_id=True))
    err = await next_frame_error(ws)
    assert err["code"] == "bad_frame" and "conversation_id" in err["message"]
    assert await Message.objects.acount() == 0
    await ws.close()


# ---- integrity errors -------------------------------------------------------------------------------


def _frame(conversation_id: int | None) -> ChatSend:
    return ChatSend(client_message_id=str(uuid.uuid4()), conversation_id=conversation_id, message="hi")


def test_an_integrity_error_that_is_not_the_running_run_is_not_busy(user: Any, monkeypatch: Any) -> None:
    from chat.providers.offline import OfflineProvider

    conv = Conversation.objects.create(owner=user, title="c")

    def broken(*args: Any) -> Any:
        raise IntegrityError("CHECK constraint failed: JSON_VALID")

    monkeypatch.setattr(admission, "_turn_insert", broken)
    with pytest.raises(IntegrityError):
        admission._turn_start_db(user, _frame(conv.pk), OfflineProvider(), NO_EXTRAS)
    with pytest.raises(IntegrityError):  # a new conversation has no running run either
        admission._turn_start_db(user, _frame(None), OfflineProvider(), NO_EXTRAS)


def test_a_running_run_that_ends_between_the_insert_and_the_check_does_not_fail_the_send(user: Any, monkeypatch: Any) -> None:
    # The slot's holder (a dead process's run) is swept on another thread right after this admission's insert hit
    # the one-running-run constraint: the send takes the freed slot, it does not fail with the IntegrityError.
    from django.utils import timezone

    from chat.providers.offline import OfflineProvider

    conv = Conversation.objects.create(owner=user, title="c")
    msg = Message.objects.create(conversation=conv, role="user", content="first")
    held = Run.objects.create(conversation=conv, user_message=msg, status="running", heartbeat_at=timezone.now())
    real = admission._turn_insert
    calls: list[str] = []

    def insert_then_sweep(*args: Any) -> Any:
        calls.append("insert")
        try:
            return real(*args)
        finally:
            Run.objects.filter(pk=held.pk).update(status="interrupted")  # the sweep, between the insert and the check

    monkeypatch.setattr(admission, "_turn_insert", insert_then_sweep)
    started, record = admission._turn_start_db(user, _frame(conv.pk), OfflineProvider(), NO_EXTRAS)
    assert calls == ["insert", "insert"] and record is not None and started.conversation_id == conv.pk
    assert Run.objects.get(pk=started.run_id).status == "running"


def test_a_dead_run_swept_by_the_heartbeat_first_does_not_make_the_send_busy(user: Any, monkeypatch: Any) -> None:
    # The send's own sweep of a dead process's run loses the race to the heartbeat's sweep on another thread: it
    # sweeps nothing, but the slot is free, so the send takes it instead of answering "busy".
    from datetime import timedelta

    from django.utils import timezone

    from chat.providers.offline import OfflineProvider

    conv = Conversation.objects.create(owner=user, title="c")
    msg = Message.objects.create(conversation=conv, role="user", content="first")
    dead = Run.objects.create(conversation=conv, user_message=msg, status="running", owner_process="gone:1:x",
                              heartbeat_at=timezone.now() - timedelta(seconds=60))
    real = admission.runs_sweep

    def heartbeat_sweeps_first(**kwargs: Any) -> int:
        assert real() == 1  # the heartbeat's sweep takes the dead run ...
        return real(**kwargs)  # ... so the send's finds nothing left to sweep

    monkeypatch.setattr(admission, "runs_sweep", heartbeat_sweeps_first)
    started, record = admission._turn_start_db(user, _frame(conv.pk), OfflineProvider(), NO_EXTRAS)
    assert record is not None and Run.objects.get(pk=started.run_id).status == "running"
    assert Run.objects.get(pk=dead.pk).status == "interrupted"


def test_the_running_run_constraint_is_busy(user: Any) -> None:
    from chat.providers.offline import OfflineProvider

    conv = Conversation.objects.create(owner=user, title="c")
    msg = Message.objects.create(conversation=conv, role="user", content="first")
    from django.utils import timezone

    Run.objects.create(conversation=conv, user_message=msg, status="running", heartbeat_at=timezone.now())
    with pytest.raises(Busy):
        admission._turn_start_db(user, _frame(conv.pk), OfflineProvider(), NO_EXTRAS)


# ---- HTTP bodies ------------------------------------------------------------------------------------


async def _client(user: Any) -> tuple[AsyncClient, dict[str, str]]:
    return AsyncClient(), {"Authorization": f"Token {await database_sync_to_async(token_for)(user)}"}


@pytest.mark.parametrize("path", ["/api/chat/stream", "/api/chat", "/api/conversations/"])
async def test_oversized_http_bodies_get_the_json_envelope(user: Any, path: str) -> None:
    client, headers = await _client(user)
    body = json.dumps(send(message="x" * (3 * 1024 * 1024)))  # over Django's DATA_UPLOAD_MAX_MEMORY_SIZE too
    response = await client.post(path, body, content_type="application/json", headers=headers)
    assert response.status_code == 413, response.content[:200]
    assert response["Content-Type"].startswith("application/json")
    check_http(response.status_code, response.content)
    assert response.json()["code"] == "too_large"


async def test_oversized_form_body_from_a_session_gets_the_json_envelope(user: Any) -> None:
    client = AsyncClient()
    await database_sync_to_async(client.force_login)(user)
    response = await client.post("/api/chat/stream", "a=" + "x" * (3 * 1024 * 1024), content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413 and response.json()["code"] == "too_large"


@pytest.mark.parametrize("path", ["/api/chat/stream", "/api/chat", "/api/conversations/"])
@pytest.mark.parametrize("body", ['{"message": NaN, "client_message_id": "x"}', "{not json", '{"title": Infinity}'])
async def test_malformed_http_bodies_get_bad_json(user: Any, path: str, body: str) -> None:
    client, headers = await _client(user)
    response = await client.post(path, body, content_type="application/json", headers=headers)
    assert response.status_code == 400, response.content[:200]
    check_http(response.status_code, response.content)
    assert response.json()["code"] == "bad_json"
    assert await Conversation.objects.acount() == 0


async def test_approve_body_is_strict(user: Any) -> None:
    client, headers = await _client(user)
    for body in ({"tool_use_id": "t", "approved": "yes"}, {"tool_use_id": 7, "approved": True}):
        response = await client.post(f"/api/chat/runs/{uuid.uuid4()}/approve", json.dumps(body), content_type="application/json", headers=headers)
        assert response.status_code == 400 and response.json()["code"] == "bad_frame"
