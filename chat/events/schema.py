"""The protocol published as JSON Schema (2020-12): `manage.py chat_protocol_schema` writes it to docs/protocol/."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from chat.events.client import CLIENT_FRAMES
from chat.events.server import SERVER_EVENTS

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def protocol_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema (2020-12) of the protocol by file name: every server event (`oneOf`) and every client frame."""
    return {
        "events.schema.json": _schema(
            SERVER_EVENTS, "serialization", "pagechat protocol v1: server events",
            "Every frame the server sends on the websocket and as SSE `data:` (a run's events, with `seq`, and "
            "frame-level errors, without). The body of POST /api/chat is CompletePayload; HTTP error bodies are FrameError."),
        "frames.schema.json": _schema(
            CLIENT_FRAMES, "validation", "pagechat protocol v1: client frames",
            "Every frame a client sends on the websocket. POST /api/chat and /api/chat/stream take ChatSend's fields "
            "(`type` may be left out there)."),
    }


def _schema(models: Sequence[type[BaseModel]], mode: Literal["validation", "serialization"], title: str,
            description: str) -> dict[str, Any]:
    refs, top = models_json_schema([(m, mode) for m in models], ref_template="#/$defs/{model}")
    return {"$schema": SCHEMA_DIALECT, "title": title, "description": description,
            "oneOf": [refs[(m, mode)] for m in models], "$defs": top["$defs"]}
