"""Every frame a test receives is checked against the COMMITTED protocol schema (docs/protocol/*.schema.json).

The websocket client (tests/conftest.py), the SSE parsers, REST bodies, the resilience traces and the
cluster's clients all call these, so every transport and fault test validates what it receives.
"""
from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "docs" / "protocol"


class ProtocolViolation(AssertionError):
    """The server sent something the published protocol does not allow."""


def _load(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return schema


EVENTS_SCHEMA = _load("events.schema.json")
FRAMES_SCHEMA = _load("frames.schema.json")
_EVENTS = Draft202012Validator(EVENTS_SCHEMA)
_DEFS = {name: Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": EVENTS_SCHEMA["$defs"]})
         for name in ("CompletePayload", "FrameError")}
_lock = threading.Lock()
VALIDATED: Counter[str] = Counter()  # frames checked, by type (tests assert on it)


def _fail(validator: Draft202012Validator, instance: Any, what: str) -> None:
    errors = sorted(validator.iter_errors(instance), key=lambda e: e.path)
    if errors:
        detail = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message[:200]}" for e in errors[:3])
        raise ProtocolViolation(f"{what} does not match docs/protocol: {detail}\n{json.dumps(instance)[:500]}")


def check_event(event: Any) -> dict[str, Any]:
    """A decoded server frame (websocket message or SSE `data:`): valid against events.schema.json."""
    _fail(_EVENTS, event, f"server frame {event.get('type') if isinstance(event, dict) else type(event).__name__!r}")
    with _lock:
        VALIDATED[event["type"] if "seq" in event or event["type"] != "error" else "frame_error"] += 1
    return dict(event)


def check_wire(text: str | bytes) -> dict[str, Any]:
    """A server frame as received: JSON text, valid against events.schema.json."""
    try:
        event = json.loads(text)
    except ValueError as exc:
        raise ProtocolViolation(f"server frame is not JSON: {text[:200]!r}") from exc
    return check_event(event)


def check_complete_body(body: Any) -> dict[str, Any]:
    """The body of a successful POST /api/chat: a CompletePayload."""
    _fail(_DEFS["CompletePayload"], body, "POST /api/chat body")
    with _lock:
        VALIDATED["rest_complete"] += 1
    return dict(body)


def check_error_body(body: Any) -> dict[str, Any]:
    """An HTTP error body: a FrameError."""
    _fail(_DEFS["FrameError"], body, "HTTP error body")
    with _lock:
        VALIDATED["http_error"] += 1
    return dict(body)


def check_http(status: int, body: bytes | str) -> dict[str, Any]:
    """A chat API JSON response: POST /api/chat's CompletePayload when 2xx with a `message`, a FrameError when >= 400."""
    data = json.loads(body)
    if status >= 400:
        return check_error_body(data)
    if isinstance(data, dict) and "message_html" in data:
        return check_complete_body(data)
    return dict(data) if isinstance(data, dict) else {"items": data}


async def sse_events(response: Any) -> AsyncIterator[dict[str, Any]]:
    """The events of a streaming test response (SSE `data:` lines), each validated with `check_wire` as it arrives."""
    buffer = b""
    async for chunk in response.streaming_content:
        buffer += chunk
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            for line in block.decode().splitlines():
                if line.startswith("data: "):
                    yield check_wire(line[6:])
