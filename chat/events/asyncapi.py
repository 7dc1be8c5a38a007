"""Protocol v1's streams described in AsyncAPI 3.0: the websocket and the SSE streams, their messages referencing
the published JSON Schema (docs/protocol/events.schema.json and frames.schema.json, same directory)."""
from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel

from chat.events.client import CLIENT_FRAMES
from chat.events.errors import ERRORS
from chat.events.server import RUN_EVENTS, FrameError

EVENTS_FILE = "./events.schema.json"
FRAMES_FILE = "./frames.schema.json"
# AsyncAPI 3.0's own payload format is a superset of JSON Schema draft-07; our files are 2020-12, so each payload
# names its format (a Multi Format Schema Object) and tools read it as JSON Schema.
SCHEMA_FORMAT = "application/schema+json;version=draft-07"


def _type(model: type[BaseModel]) -> str:
    return str(get_args(model.model_fields["type"].annotation)[0]) if model is not FrameError else "error (frame-level)"


def _message(model: type[BaseModel], file: str, *, summary: str | None = None) -> dict[str, Any]:
    name = model.__name__
    return {
        "name": _type(model),
        "title": name,
        "summary": summary or (model.__doc__ or name).strip().splitlines()[0],
        "contentType": "application/json",
        "payload": {"schemaFormat": SCHEMA_FORMAT, "schema": {"$ref": f"{file}#/$defs/{name}"}},
    }


def asyncapi_document(*, api_prefix: str = "/api/", host: str = "127.0.0.1:8000", extra_websocket_paths: tuple[str, ...] = ("/ws/chat/",)) -> dict[str, Any]:
    """The AsyncAPI 3.0 document of protocol v1 with the API mounted at `api_prefix` (the demo's `/api/`)."""
    server_msgs = {m.__name__: _message(m, EVENTS_FILE) for m in RUN_EVENTS}
    server_msgs["FrameError"] = _message(FrameError, EVENTS_FILE, summary="A refusal outside any run's event sequence (no seq); the socket stays open.")
    client_msgs = {m.__name__: _message(m, FRAMES_FILE) for m in CLIENT_FRAMES}
    ref = {name: {"$ref": f"#/components/messages/{name}"} for name in (*server_msgs, *client_msgs)}
    run_events = {n: ref[n] for n in server_msgs if n != "FrameError"}
    codes = "\n".join(f"- `{code}` ({info.http_status}): {info.meaning}" for code, info in ERRORS.items())
    websocket_channels = {
        "websocket": {
            "address": f"{api_prefix}ws/",
            "title": "The chat websocket",
            "description": (
                "Client frames in, server events out (text frames, one JSON object each). Authentication at the handshake: "
                "`Authorization: Token <key>` (programs), or the session cookie with an `Origin` whose host is in "
                "ALLOWED_HOSTS (browsers). A refused handshake is closed with 403. Every run event carries `run_id`, a "
                "gapless `seq` from 1 and `conversation_id`; a run ends with exactly one of `complete`, `error`, "
                "`cancelled`. Error codes (`code` of `error` frames):\n" + codes
            ),
            "servers": [{"$ref": "#/servers/demo"}],
            "messages": {**{n: ref[n] for n in client_msgs}, **{n: ref[n] for n in server_msgs}},
            "bindings": {"ws": {"headers": {"type": "object", "properties": {
                "Authorization": {"type": "string", "description": "`Token <key>`"},
                "Origin": {"type": "string", "description": "required with session authentication"},
            }}}},
        },
    }
    for i, path in enumerate(extra_websocket_paths):
        websocket_channels[f"websocketV1Path{i or ''}"] = {
            **websocket_channels["websocket"], "address": path,
            "title": "The chat websocket at protocol v1's documented address (the same consumer)",
        }
    sse_description = (
        "Server-sent events: each event is `id: <run_id>:<seq>` then `data: <event JSON>`. Reconnect with "
        "`Last-Event-ID: <run_id>:<seq>` to resume gaplessly; events no longer retained end the stream with "
        "`error{code:\"resync\"}` (reload the conversation over REST)."
    )
    channels: dict[str, Any] = {
        **websocket_channels,
        "chatStream": {
            "address": f"{api_prefix}chat/stream",
            "title": "SSE: a new turn's events (POST the ChatSend body)",
            "description": sse_description,
            "servers": [{"$ref": "#/servers/demoHttp"}],
            "messages": run_events,
            "bindings": {"http": {"method": "POST"}},
        },
        "runEvents": {
            "address": f"{api_prefix}chat/runs/{{run_id}}/events",
            "title": "SSE: replay and follow one run",
            "description": sse_description,
            "parameters": {"run_id": {"description": "the run's id (`run_id` of its events)"}},
            "servers": [{"$ref": "#/servers/demoHttp"}],
            "messages": run_events,
            "bindings": {"http": {"method": "GET"}},
        },
    }

    def ops(channel: str, action: str, names: list[str], summary: str) -> dict[str, Any]:
        return {"action": action, "channel": {"$ref": f"#/channels/{channel}"}, "summary": summary,
                "messages": [{"$ref": f"#/channels/{channel}/messages/{n}"} for n in names]}

    operations: dict[str, Any] = {}
    for channel in websocket_channels:
        suffix = channel[0].upper() + channel[1:]
        operations[f"send{suffix}"] = ops(channel, "send", list(client_msgs), "What a client sends")
        operations[f"receive{suffix}"] = ops(channel, "receive", list(server_msgs), "What the server sends")
    operations["receiveChatStream"] = ops("chatStream", "receive", list(run_events), "A new turn's events")
    operations["receiveRunEvents"] = ops("runEvents", "receive", list(run_events), "A run's events after Last-Event-ID")
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "pagechat protocol v1",
            "version": "1",
            "description": (
                "The websocket and SSE streams of pagechat. Paths are those of the demo, which mounts `chat.urls` at "
                f"`{api_prefix}`. The REST endpoints are in OpenAPI (docs/api/openapi.yaml); every payload below is a "
                "JSON Schema (2020-12) definition in docs/protocol/*.schema.json; the prose contract is docs/protocol.md."
            ),
        },
        "defaultContentType": "application/json",
        "servers": {
            "demo": {"host": host, "protocol": "ws", "description": "`make run` (use wss/https behind TLS)"},
            "demoHttp": {"host": host, "protocol": "http", "description": "the SSE endpoints"},
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": {**server_msgs, **client_msgs}},
    }
