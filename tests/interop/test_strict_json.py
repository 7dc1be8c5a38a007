"""Every transport reads a client's JSON the one way the v1 websocket does (chat.events.client.client_json): NaN,
Infinity and -Infinity are `bad_json`, a NUL character (in the message or deep inside another field) or a lone
surrogate is `bad_frame`; the answer is the v1 error in the transport's own envelope (never HTML, never a 500) and
nothing is stored. Over the real ASGI app: websocket, SSE, REST, approve, AG-UI, AI SDK, preferences, conversations
(create, rename) and messages (feedback). On SQLite by default; the `services` test runs it on PostgreSQL, where
NaN and NUL used to be a DataError (a 500)."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connection
from django.test import AsyncClient

from chat.models import Attachment, Conversation, Message, Run, UserPreferences
from chat.providers import scripted as s
from tests.conftest import token_for, ws_connect
from tests.protocol import check_http

pytestmark = pytest.mark.django_db(transaction=True)

# Placeholders in a transport's valid body: where a number, the message text and a deeply nested string go.
NUM, MSG, NESTED = '"@num@"', "@msg@", "@nested@"
DEEP = {"n": "@num@", "deep": {"list": [{"k": "@nested@"}]}}


@dataclass(frozen=True)
class Case:
    """What replaces the placeholders (JSON text), and the v1 code that answers it."""

    num: str = "1.5"
    msg: str = "hello"
    nested: str = "fine"
    code: str = ""


CASES = {
    "NaN": Case(num="NaN", code="bad_json"),
    "Infinity": Case(num="Infinity", code="bad_json"),
    "-Infinity": Case(num="-Infinity", code="bad_json"),
    "NUL in the message": Case(msg="hel\\u0000lo", code="bad_frame"),
    "NUL in a nested field": Case(nested="fi\\u0000ne", code="bad_frame"),
    "NUL in a nested key": Case(nested='", "\\u0000": "x', code="bad_frame"),
    "lone surrogate": Case(nested="\\ud800", code="bad_frame"),
}
VALID = Case()


@dataclass(frozen=True)
class Transport:
    """One JSON-accepting endpoint: how to send it a body, and its valid body with the placeholders."""

    name: str
    method: str  # "ws", or an HTTP method
    path: str  # {conversation} and {message} are filled in with the user's own
    body: dict[str, Any]
    accepted: int  # the status (or, for "ws", nothing) of the valid body: proof that only the placeholder is refused


SEND = {"client_message_id": "c-1", "conversation_id": None, "message": MSG, "context": DEEP}
TRANSPORTS = [
    Transport("websocket", "ws", "/ws/chat/", {"type": "chat.send", **SEND}, 0),
    Transport("sse", "post", "/api/chat/stream", SEND, 200),
    Transport("rest", "post", "/api/chat", SEND, 200),
    Transport("approve", "post", "/api/chat/runs/{run}/approve", {"tool_use_id": MSG, "approved": True, **DEEP}, 404),
    Transport("ag-ui", "post", "/api/chat/ag-ui", {
        "threadId": "t-1", "runId": "r-1", "messages": [{"id": "u-1", "role": "user", "content": MSG}], "tools": [], "context": [],
        "forwardedProps": {"page": "home", "context": DEEP}}, 200),
    Transport("ai-sdk", "post", "/api/chat/ai-sdk", {
        "id": "t-2", "messages": [{"id": "u-2", "role": "user", "parts": [{"type": "text", "text": MSG}]}], "context": DEEP}, 200),
    Transport("preferences", "put", "/api/preferences/", {"instructions": MSG, **DEEP}, 200),
    Transport("conversation create", "post", "/api/conversations/", {"title": MSG, **DEEP}, 201),
    Transport("conversation rename", "patch", "/api/conversations/{conversation}/", {"title": MSG, **DEEP}, 200),
    Transport("feedback", "patch", "/api/messages/{message}/", {"feedback": "good", "feedback_comment": MSG, **DEEP}, 200),
]


def body_text(transport: Transport, case: Case) -> str:
    """The transport's body as JSON text, with the case's raw JSON in the placeholders."""
    text = json.dumps(transport.body)
    assert NUM in text and MSG in text and NESTED in text, transport.name
    return text.replace(NUM, case.num).replace(MSG, case.msg).replace(NESTED, case.nested)


def stored() -> dict[str, Any]:
    """Everything a request could have written."""
    return {
        "conversations": list(Conversation.objects.order_by("pk").values_list("pk", "title", "thread_id")),
        "messages": list(Message.objects.order_by("pk").values_list("pk", "content", "context", "feedback", "feedback_comment")),
        "runs": Run.objects.count(), "attachments": Attachment.objects.count(),
        "preferences": list(UserPreferences.objects.values_list("user_id", "instructions")),
    }


def existing(user: Any) -> dict[str, str]:
    """The user's own conversation and answer, for the endpoints that change one."""
    conversation = Conversation.objects.create(owner=user, title="kept")
    Message.objects.create(conversation=conversation, role="user", content="q")
    answer = Message.objects.create(conversation=conversation, role="assistant", content="a")
    UserPreferences.objects.create(user=user, instructions="kept")
    return {"conversation": str(conversation.pk), "message": str(answer.pk), "run": str(uuid.uuid4())}


async def send(user: Any, transport: Transport, text: str, ids: dict[str, str]) -> tuple[int, dict[str, Any] | None]:
    """Send `text`; the HTTP status (0 on the websocket) and the error it was answered with, if any."""
    if transport.method == "ws":
        ws, _ = await ws_connect(user)
        assert ws is not None
        try:
            await ws.send(text)
            frame = await ws.recv()
            while frame["type"] not in ("error", "complete", "cancelled"):
                frame = await ws.recv()
        finally:
            await ws.close()
        return 0, frame if frame["type"] == "error" else None
    token = await database_sync_to_async(token_for)(user)
    response = await getattr(AsyncClient(), transport.method)(transport.path.format(**ids), text, content_type="application/json",
                                                              headers={"Authorization": f"Token {token}"})
    if response.status_code < 400:
        if response.streaming:  # the turn runs to its end before the state is compared
            b"".join([chunk async for chunk in response.streaming_content])
        return response.status_code, None
    assert response["Content-Type"].startswith("application/json"), (transport.name, response.status_code, response.content[:300])
    return response.status_code, check_http(response.status_code, response.content)  # the published error envelope


async def refused_and_nothing_stored(user: Any, transport: Transport) -> None:
    """Each case in turn: refused with its v1 code, and the database as it was."""
    ids = await database_sync_to_async(existing)(user)
    before = await database_sync_to_async(stored)()
    for name, case in CASES.items():
        status, error = await send(user, transport, body_text(transport, case), ids)
        assert error is not None and error["code"] == case.code, (transport.name, name, status, error)
        assert status in (0, 400), (transport.name, name, status)
        assert await database_sync_to_async(stored)() == before, (transport.name, name)


@pytest.mark.parametrize("transport", TRANSPORTS, ids=[t.name for t in TRANSPORTS])
async def test_every_transport_refuses_what_json_cannot_store(user: Any, scripted: Any, transport: Transport) -> None:
    await refused_and_nothing_stored(user, transport)
    assert not scripted.requests  # no model call either


@pytest.mark.parametrize("transport", TRANSPORTS, ids=[t.name for t in TRANSPORTS])
async def test_the_same_body_with_plain_values_is_taken(user: Any, scripted: Any, transport: Transport) -> None:
    """The refusals above are the placeholder's doing: with a number and plain text there, each endpoint takes the body."""
    scripted.enqueue(s.text("fine"))
    ids = await database_sync_to_async(existing)(user)
    status, error = await send(user, transport, body_text(transport, VALID), ids)
    if transport.accepted == 404:  # approve: read and found valid, then no such run
        assert status == 404 and error is not None and error["code"] == "not_found", error
    else:
        assert (status, error) == (transport.accepted, None), (transport.name, status, error)


@pytest.mark.services
@pytest.mark.parametrize("transport", TRANSPORTS, ids=[t.name for t in TRANSPORTS])
async def test_on_postgresql_too(user: Any, scripted: Any, transport: Transport) -> None:
    """PostgreSQL refuses NaN in jsonb and NUL in text with a DataError (a 500): none of them reaches it."""
    assert connection.vendor == "postgresql", "run with DATABASE_URL=postgres://..."
    await refused_and_nothing_stored(user, transport)


def test_deeper_than_the_frame_limit_is_bad_frame_on_the_standard_clients_too(client: Any, user: Any) -> None:
    """The nesting limit of v1 frames (MAX_NESTING) holds for AG-UI and AI SDK bodies as well."""
    client.force_login(user)
    deep: Any = "x"
    for _ in range(40):
        deep = {"k": deep}
    for path, body in (("/api/chat/ag-ui", {"threadId": "t", "runId": "r", "messages": [], "forwardedProps": {"context": deep}}),
                       ("/api/chat/ai-sdk", {"id": "t", "messages": [], "context": deep})):
        response = client.post(path, json.dumps(body), content_type="application/json")
        assert response.status_code == 400 and check_http(400, response.content)["code"] == "bad_frame", response.content
        assert "nested deeper" in response.json()["message"]
