"""Client -> server: the frames a client sends on the websocket (and POST bodies), and how they are read."""
from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from chat.events.base import Frame
from chat.events.server import FrameError, error_event

InteractionType = Literal["text_input", "value_selected", "action_executed"]


class ActionMetadata(Frame):
    """The button a user clicked: a server action carries the signed token the server gave it."""

    action_identifier: str = Field(min_length=1, max_length=100)
    action_data: Any = None
    token: str | None = Field(default=None, max_length=4096)


class HistoryItem(Frame):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=100_000)
    timestamp: str | None = None


class ChatSend(Frame):
    """Send a message (starts a run; a resend of a stored client_message_id starts nothing new)."""

    type: Literal["chat.send"] = "chat.send"
    client_message_id: str = Field(min_length=1, max_length=64)
    conversation_id: int | None = None
    message: str = Field(max_length=100_000)
    context: dict[str, Any] = Field(default_factory=dict)
    interaction_type: InteractionType = "text_input"
    action_metadata: ActionMetadata | None = None
    conversation_history: list[HistoryItem] | None = Field(default=None, max_length=200)


class ChatCancel(Frame):
    """Cancel one of the user's runs, wherever it runs."""

    type: Literal["chat.cancel"]
    run_id: str = Field(min_length=1, max_length=64)


class ChatResume(Frame):
    """Replay a run's events after `after_seq`, then follow it live."""

    type: Literal["chat.resume"]
    run_id: str = Field(min_length=1, max_length=64)
    after_seq: int = Field(default=0, ge=0)


class ChatApprove(Frame):
    """Answer a `tool_approval`."""

    type: Literal["chat.approve"]
    run_id: str = Field(min_length=1, max_length=64)
    tool_use_id: str = Field(min_length=1, max_length=128)
    approved: bool


CLIENT_FRAMES: tuple[type[Frame], ...] = (ChatSend, ChatCancel, ChatResume, ChatApprove)
ClientFrame = Annotated[ChatSend | ChatCancel | ChatResume | ChatApprove, Field(discriminator="type")]
client_frame_adapter: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)
CLIENT_FRAME_TYPES: frozenset[str] = frozenset({"chat.send", "chat.cancel", "chat.resume", "chat.approve"})


# ---- reading client frames ----------------------------------------------------------------------

MAX_NESTING = 32
_JSON_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _nesting_depth(text: str) -> int:
    """The deepest bracket nesting outside strings (strings are dropped by a C-speed regex first)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_frame(text: str | None, max_bytes: int) -> ClientFrame | FrameError:
    """A validated client frame, or the FrameError that answers it."""
    if text is None:
        return error_event("bad_frame", "frames must be JSON text")
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        return error_event("too_large", f"frame is larger than {max_bytes} bytes")
    if _nesting_depth(text) > MAX_NESTING:  # decided before parsing: the parser's own limit depends on the stack
        return error_event("bad_frame", f"frame is nested deeper than {MAX_NESTING} levels")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return error_event("bad_json", "frame is not valid JSON")
    if not isinstance(data, dict):
        return error_event("bad_frame", "frame must be a JSON object")
    ftype = data.get("type")
    if not isinstance(ftype, str) or ftype not in CLIENT_FRAME_TYPES:
        return error_event("unknown_type", f"unknown frame type {str(ftype)[:40]!r}")
    problem = _bad_text(data)
    if problem:
        return error_event("bad_frame", f"frame contains {problem}")
    try:
        return client_frame_adapter.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error_event("bad_frame", f"{where}: {first.get('msg', 'invalid')}"[:300])
    except RecursionError:
        return error_event("bad_frame", "frame is nested too deeply")


def _bad_text(value: Any, depth: int = 0) -> str | None:
    """Why a decoded frame cannot be stored or echoed (NUL, lone surrogates, nesting), or None."""
    if depth > MAX_NESTING:
        return f"nesting deeper than {MAX_NESTING} levels"
    if isinstance(value, str):
        if "\x00" in value:
            return "NUL characters"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "invalid text (lone surrogates)"
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _bad_text(key, depth + 1) if isinstance(key, str) else None
        found = found or _bad_text(item, depth + 1)
        if found:
            return found
    return None
