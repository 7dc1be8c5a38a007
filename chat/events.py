"""Every wire event of protocol v1 as a typed model; client frames are an explicit allowlist."""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import json
import re

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

InteractionType = Literal["text_input", "value_selected", "action_executed"]


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---- client -> server ---------------------------------------------------------------------------


class ActionMetadata(_Frame):
    action_identifier: str = Field(min_length=1, max_length=100)
    action_data: Any = None
    token: str | None = Field(default=None, max_length=4096)


class HistoryItem(_Frame):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=100_000)
    timestamp: str | None = None


class ChatSend(_Frame):
    type: Literal["chat.send"] = "chat.send"
    client_message_id: str = Field(min_length=1, max_length=64)
    conversation_id: int | None = None
    message: str = Field(max_length=100_000)
    context: dict[str, Any] = Field(default_factory=dict)
    interaction_type: InteractionType = "text_input"
    action_metadata: ActionMetadata | None = None
    conversation_history: list[HistoryItem] | None = Field(default=None, max_length=200)


class ChatCancel(_Frame):
    type: Literal["chat.cancel"]
    run_id: str = Field(min_length=1, max_length=64)


class ChatResume(_Frame):
    type: Literal["chat.resume"]
    run_id: str = Field(min_length=1, max_length=64)
    after_seq: int = Field(default=0, ge=0)


class ChatApprove(_Frame):
    type: Literal["chat.approve"]
    run_id: str = Field(min_length=1, max_length=64)
    tool_use_id: str = Field(min_length=1, max_length=128)
    approved: bool


ClientFrame = Annotated[Union[ChatSend, ChatCancel, ChatResume, ChatApprove], Field(discriminator="type")]
client_frame_adapter: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)
CLIENT_FRAME_TYPES: frozenset[str] = frozenset({"chat.send", "chat.cancel", "chat.resume", "chat.approve"})


# ---- server -> client ---------------------------------------------------------------------------


class _Event(_Frame):
    run_id: str
    seq: int
    conversation_id: int | None


class StatusEvent(_Event):
    type: Literal["status"] = "status"
    message: str


class TextDeltaEvent(_Event):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolStartEvent(_Event):
    type: Literal["tool_start"] = "tool_start"
    tool: str
    input: dict[str, Any]
    tool_use_id: str


class ToolProgressEvent(_Event):
    type: Literal["tool_progress"] = "tool_progress"
    tool: str
    stage: str
    message: str
    progress: float | None = None
    data: Any = None


class ToolCompleteEvent(_Event):
    type: Literal["tool_complete"] = "tool_complete"
    tool: str
    index: int


class ToolApprovalEvent(_Event):
    type: Literal["tool_approval"] = "tool_approval"
    tool: str
    input: dict[str, Any]
    tool_use_id: str


class CompleteEvent(_Event):
    type: Literal["complete"] = "complete"
    payload: dict[str, Any]


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    code: str
    message: str


class CancelledEvent(_Event):
    type: Literal["cancelled"] = "cancelled"


ServerEvent = Annotated[
    Union[
        StatusEvent,
        TextDeltaEvent,
        ToolStartEvent,
        ToolProgressEvent,
        ToolCompleteEvent,
        ToolApprovalEvent,
        CompleteEvent,
        ErrorEvent,
        CancelledEvent,
    ],
    Field(discriminator="type"),
]
server_event_adapter: TypeAdapter[ServerEvent] = TypeAdapter(ServerEvent)
TERMINAL_TYPES: frozenset[str] = frozenset({"complete", "error", "cancelled"})


class FrameError(_Frame):
    """A frame-level refusal: no run, the socket stays open."""

    type: Literal["error"] = "error"
    code: str
    message: str
    run_id: str | None = None


# Codes a frame-level error may carry; clients switch on them.
ERROR_CODES = (
    "bad_json", "bad_frame", "unknown_type", "too_large", "busy", "not_found", "rate_limited",
    "action_rejected", "resync", "unauthorized", "provider_error", "internal",
)


def frame_error(code: str, message: str, run_id: str | None = None) -> str:
    return FrameError(code=code, message=message, run_id=run_id).model_dump_json(exclude_none=True)


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


def parse_frame(text: str | None, max_bytes: int) -> "ClientFrame | FrameError":
    """A validated client frame, or a FrameError describing why not."""
    if text is None:
        return FrameError(code="bad_frame", message="frames must be JSON text")
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        return FrameError(code="too_large", message=f"frame is larger than {max_bytes} bytes")
    if _nesting_depth(text) > MAX_NESTING:  # decided before parsing: the parser's own limit depends on the stack
        return FrameError(code="bad_frame", message=f"frame is nested deeper than {MAX_NESTING} levels")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return FrameError(code="bad_json", message="frame is not valid JSON")
    if not isinstance(data, dict):
        return FrameError(code="bad_frame", message="frame must be a JSON object")
    ftype = data.get("type")
    if not isinstance(ftype, str) or ftype not in CLIENT_FRAME_TYPES:
        return FrameError(code="unknown_type", message=f"unknown frame type {str(ftype)[:40]!r}")
    problem = _bad_text(data)
    if problem:
        return FrameError(code="bad_frame", message=f"frame contains {problem}")
    try:
        return client_frame_adapter.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return FrameError(code="bad_frame", message=f"{where}: {first.get('msg', 'invalid')}"[:300])
    except RecursionError:
        return FrameError(code="bad_frame", message="frame is nested too deeply")




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
