"""A client written only from the specs' shapes holds a conversation over REST, SSE and the websocket.

`SpecClient` knows the specs' ChatRequest (message, context, interaction_type, action_metadata,
conversation_history, conversation_id) and their events (status, text_delta, tool_start, tool_progress,
tool_complete, complete, error, cancelled) - nothing else: no `client_message_id`, no `type` on the
websocket, no tokens. Every frame it receives is still validated against the published protocol schema.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from chat.models import Message
from tests.chat.test_http import TokenClient, auth_headers, parse_sse
from tests.conftest import token_for
from tests.protocol import check_wire

pytestmark = pytest.mark.django_db(transaction=True)

SPEC_EVENT_TYPES = {"status", "text_delta", "tool_start", "tool_progress", "tool_complete", "complete", "error", "cancelled"}


@dataclass
class SpecResponse:
    """What the specs' useGeneralChat hook keeps of a streamed answer."""

    message: str
    suggested_values: list[dict[str, Any]]
    suggested_actions: list[dict[str, Any]]
    custom_payload: dict[str, Any] | None
    conversation_id: int | None
    streamed_text: str = ""
    tools_started: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)


def reduce_events(events: list[dict[str, Any]]) -> SpecResponse:
    """The specs' `switch (event.type)`, reading only the fields the specs name."""
    text, tools, statuses = "", [], []
    for event in events:
        assert event["type"] in SPEC_EVENT_TYPES, event["type"]
        if event["type"] == "status":
            statuses.append(event["message"])
        elif event["type"] == "text_delta":
            text += event["text"]
        elif event["type"] == "tool_start":
            tools.append(event["tool"])
            assert isinstance(event["input"], dict) and event["tool_use_id"]
        elif event["type"] == "tool_complete":
            assert isinstance(event["index"], int)
        elif event["type"] == "error":
            raise AssertionError(f"error event: {event['message']}")
        elif event["type"] == "complete":
            return from_payload(event["payload"], streamed_text=text, tools=tools, statuses=statuses)
    raise AssertionError("no complete event")


def from_payload(p: dict[str, Any], **extra: Any) -> SpecResponse:
    return SpecResponse(message=p["message"], suggested_values=p.get("suggested_values") or [],
                        suggested_actions=p.get("suggested_actions") or [], custom_payload=p.get("custom_payload"),
                        conversation_id=p.get("conversation_id"),
                        **{k if k != "tools" else "tools_started": v for k, v in extra.items()})


class SpecClient:
    """Sends the specs' ChatRequest over one transport and keeps the transcript as the specs' Message list."""

    def __init__(self, transport: str, headers: dict[str, str], ws: WebsocketCommunicator | None = None, *, stateful: bool) -> None:
        self.transport, self.http, self.ws, self.stateful = transport, TokenClient(headers), ws, stateful
        self.history: list[dict[str, str]] = []
        self.conversation_id: int | None = None
        self.context: dict[str, Any] = {"current_page": "home"}

    def request(self, message: str, interaction_type: str, action_metadata: dict[str, Any] | None) -> dict[str, Any]:
        req: dict[str, Any] = {"message": message, "context": self.context, "interaction_type": interaction_type,
                               "conversation_history": list(self.history)}
        if action_metadata is not None:
            req["action_metadata"] = action_metadata
        if self.stateful and self.conversation_id is not None:
            req["conversation_id"] = self.conversation_id  # spec 004's field; spec 000 resends the history instead
        return req

    async def send(self, message: str, interaction_type: str = "text_input", action_metadata: dict[str, Any] | None = None) -> SpecResponse:
        req = self.request(message, interaction_type, action_metadata)
        if self.transport == "rest":
            response = await self.http.post("/api/chat", req, content_type="application/json")
            assert response.status_code == 200, response.content
            answer = from_payload(json.loads(response.content))
        elif self.transport == "sse":
            response = await self.http.post("/api/chat/stream", req, content_type="application/json")
            assert response.status_code == 200 and response["Content-Type"] == "text/event-stream", response.content
            answer = reduce_events([data for _, data in parse_sse([c async for c in response.streaming_content])])
        else:
            assert self.ws is not None
            await self.ws.send_to(text_data=json.dumps(req))
            events = []
            while not events or events[-1]["type"] not in ("complete", "error", "cancelled"):
                events.append(check_wire(await self.ws.receive_from(timeout=10)))
            answer = reduce_events(events)
        now = datetime.now(UTC).isoformat()
        self.history += [{"role": "user", "content": message, "timestamp": now},
                         {"role": "assistant", "content": answer.message, "timestamp": now}]
        self.conversation_id = answer.conversation_id
        return answer


async def _client(user: Any, transport: str, *, stateful: bool) -> SpecClient:
    ws = None
    if transport == "ws":
        from config.asgi import application

        token = await database_sync_to_async(token_for)(user)
        ws = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"authorization", f"Token {token}".encode())])
        connected, _ = await ws.connect(timeout=5)
        assert connected
    return SpecClient(transport, await auth_headers(user), ws, stateful=stateful)


@pytest.fixture
def user(django_user_model: Any) -> Any:
    """A user of the demo who may create streams (the home page offers create_stream only to them)."""
    from tests.pages.demo.conftest import grant_demo_permissions

    return grant_demo_permissions(django_user_model.objects.create_user(username="ann", password="pw"))


@pytest.mark.parametrize("stateful", [True, False], ids=["conversation_id", "history_only"])
@pytest.mark.parametrize("transport", ["rest", "sse", "ws"])
async def test_spec_client_holds_the_example_conversation(user: Any, transport: str, stateful: bool) -> None:
    client = await _client(user, transport, stateful=stateful)
    # Turn 1 (text_input): the assistant asks for the area, with chips.
    first = await client.send("Help me create a research stream")
    assert [v["label"] for v in first.suggested_values][:4] == ["Oncology", "Cardiology", "Neurology", "Immunology"]
    # Turn 2 (value_selected): the form payload and its server action.
    chip = first.suggested_values[0]
    second = await client.send(chip["value"], "value_selected")
    assert second.custom_payload is not None and second.custom_payload["type"] == "research_stream_form"
    create = next(a for a in second.suggested_actions if a["action"] == "create_stream")
    assert create["handler"] == "server"
    if transport != "rest":  # the streamed text is exactly the final message
        assert second.streamed_text == second.message
    # Turn 3: a tool, reported with the specs' tool events.
    third = await client.send("please calculate 6 * 7")
    assert "42" in json.dumps(third.message) or "6 * 7 = 42" in third.message
    if transport != "rest":
        assert third.tools_started == ["calculate"]
    # Turn 4 (action_executed) as the specs send it: action_identifier + action_data, no token. It is answered
    # in the conversation - never run - with a reason and a Close button.
    fourth = await client.send(create["label"], "action_executed",
                               {"action_identifier": "create_stream", "action_data": create.get("data")})
    assert "Nothing was done" in fourth.message
    assert [a["action"] for a in fourth.suggested_actions] == ["close"]
    # What was stored: the server made up the message ids, and a stateful client stayed in one conversation.
    rows = [m async for m in Message.objects.filter(role="user", conversation__owner=user).order_by("id")]
    assert [m.interaction_type for m in rows] == ["text_input", "value_selected", "text_input", "action_executed"]
    assert all(m.client_message_id and m.client_message_id.startswith("srv-") for m in rows)
    assert len({m.conversation_id for m in rows}) == (1 if stateful else 4)
    if client.ws is not None:
        await client.ws.disconnect()


async def test_without_client_message_id_every_send_is_new(user: Any, scripted: Any) -> None:
    """No id: two identical sends are two messages (a resend is idempotent only with the client's own id)."""
    from chat.providers import scripted as s

    scripted.enqueue(s.text("one"), s.text("two"), s.text("three"))
    client = TokenClient(await auth_headers(user))
    body = {"message": "same", "context": {}}
    for _ in range(2):
        assert (await client.post("/api/chat", body, content_type="application/json")).status_code == 200
    with_id = {**body, "client_message_id": "mine-1"}
    first = json.loads((await client.post("/api/chat", with_id, content_type="application/json")).content)
    again = json.loads((await client.post("/api/chat", with_id, content_type="application/json")).content)
    assert first["run_id"] == again["run_id"]
    assert await Message.objects.filter(role="user").acount() == 3
