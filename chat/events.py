"""Protocol v1 as code: one model per client frame and per server event, and the builders every frame comes from.

Every frame the server sends, on any transport, is made here: a run's events by `<Event>.wire(envelope,
seq, ...)`, the `complete` payload by `complete_payload_build`, every error by `error_event`.
`manage.py chat_protocol_schema` publishes these models as docs/protocol/*.schema.json.
No Django here.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Self, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import to_json

from chat.errors import ERRORS, ErrorCode
from chat.rendering import render_markdown

InteractionType = Literal["text_input", "value_selected", "action_executed"]
TERMINAL_TYPES: frozenset[str] = frozenset({"complete", "error", "cancelled"})


def _type_required(schema: dict[str, Any]) -> None:
    """`type` has a default for builders' convenience, but every frame carries it."""
    required = schema.setdefault("required", [])
    if "type" in schema.get("properties", {}) and "type" not in required:
        required.insert(0, "type")


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_type_required)


def _omit_none(value: Any) -> bool:
    return value is None


# ---- client -> server ---------------------------------------------------------------------------


class ActionMetadata(_Frame):
    """The button a user clicked: a server action carries the signed token the server gave it."""

    action_identifier: str = Field(min_length=1, max_length=100)
    action_data: Any = None
    token: str | None = Field(default=None, max_length=4096)


class HistoryItem(_Frame):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=100_000)
    timestamp: str | None = None


class ChatSend(_Frame):
    """Send a message (starts a run; a resend of a stored client_message_id starts nothing new)."""

    type: Literal["chat.send"] = "chat.send"
    client_message_id: str = Field(min_length=1, max_length=64)
    conversation_id: int | None = None
    message: str = Field(max_length=100_000)
    context: dict[str, Any] = Field(default_factory=dict)
    interaction_type: InteractionType = "text_input"
    action_metadata: ActionMetadata | None = None
    conversation_history: list[HistoryItem] | None = Field(default=None, max_length=200)


class ChatCancel(_Frame):
    """Cancel one of the user's runs, wherever it runs."""

    type: Literal["chat.cancel"]
    run_id: str = Field(min_length=1, max_length=64)


class ChatResume(_Frame):
    """Replay a run's events after `after_seq`, then follow it live."""

    type: Literal["chat.resume"]
    run_id: str = Field(min_length=1, max_length=64)
    after_seq: int = Field(default=0, ge=0)


class ChatApprove(_Frame):
    """Answer a `tool_approval`."""

    type: Literal["chat.approve"]
    run_id: str = Field(min_length=1, max_length=64)
    tool_use_id: str = Field(min_length=1, max_length=128)
    approved: bool


CLIENT_FRAMES: tuple[type[_Frame], ...] = (ChatSend, ChatCancel, ChatResume, ChatApprove)
ClientFrame = Annotated[ChatSend | ChatCancel | ChatResume | ChatApprove, Field(discriminator="type")]
client_frame_adapter: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)
CLIENT_FRAME_TYPES: frozenset[str] = frozenset({"chat.send", "chat.cancel", "chat.resume", "chat.approve"})


# ---- the `complete` payload -----------------------------------------------------------------------


class SuggestedValue(_Frame):
    """A quick reply: clicking it sends `value` with interaction_type `value_selected`."""

    label: str = Field(min_length=1)
    value: str = Field(min_length=1)


class SuggestedAction(_Frame):
    """A button: a client action the tray runs, or a server action sent back with its signed `token`."""

    label: str = Field(min_length=1)
    action: str = Field(min_length=1)
    handler: Literal["client", "server"]
    data: Any = Field(default=None, exclude_if=_omit_none)
    style: Literal["primary", "secondary", "warning"] | None = Field(default=None, exclude_if=_omit_none)
    token: str | None = Field(default=None, exclude_if=_omit_none)


class CustomPayload(_Frame):
    """The turn's card (a tool's, an action's or the model's payload); earlier ones are named in the prompt by id."""

    payload_id: str
    type: str
    data: Any
    summary: str


class ToolUse(_Frame):
    """One tool call of the turn, in order; `[[tool:N]]` in the message marks where the Nth renders."""

    tool_name: str
    input: dict[str, Any]
    output: str


class TokenUsage(_Frame):
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)


class CompletePayload(_Frame):
    """The answer: also the body of `POST /api/chat`."""

    message: str
    message_html: str
    suggested_values: list[SuggestedValue]
    suggested_actions: list[SuggestedAction]
    custom_payload: CustomPayload | None
    tool_history: list[ToolUse]
    conversation_id: int
    message_id: int | None
    run_id: str
    usage: TokenUsage
    diagnostics: dict[str, Any] | None = Field(default=None, exclude_if=_omit_none, description="staff users only")


def complete_payload_build(
    *, message: str, suggested_values: Sequence[Mapping[str, Any]], suggested_actions: Sequence[Mapping[str, Any]],
    custom_payload: Mapping[str, Any] | None, tool_history: Sequence[Mapping[str, Any]], conversation_id: int,
    message_id: int | None, run_id: str, usage: Mapping[str, int], diagnostics: Mapping[str, Any] | None = None,
) -> CompletePayload:
    """The one builder of `complete.payload`, for a live turn and for a stored run alike (renders message_html)."""
    return CompletePayload.model_validate({
        "message": message, "message_html": render_markdown(message), "suggested_values": suggested_values,
        "suggested_actions": suggested_actions, "custom_payload": custom_payload, "tool_history": tool_history,
        "conversation_id": conversation_id, "message_id": message_id, "run_id": run_id, "usage": usage,
        "diagnostics": diagnostics,
    })


# ---- server -> client: a run's events ------------------------------------------------------------


def _json(value: object) -> str:
    return to_json(value).decode()


@dataclass(frozen=True, slots=True)
class Envelope:
    """What every event of one run repeats, JSON-encoded once per run: `"run_id":…,"seq":` and `,"conversation_id":…`."""

    run_id: str
    conversation_id: int | None
    head: str = field(init=False)
    tail: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "head", f'"run_id":{_json(self.run_id)},"seq":')
        object.__setattr__(self, "tail", f',"conversation_id":{_json(self.conversation_id)}')

    def around_seq(self, wire: str) -> tuple[str, str]:
        """A seq-0 frame of this run cut around its seq (a Redis script fills in the next one)."""
        at = wire.index(self.head) + len(self.head)
        if wire[at:at + 2] not in ("0,", "0}"):
            raise ValueError("not a seq-0 frame of this run")
        return wire[:at], wire[at + 1:]


class RunEvent(_Frame):
    """Every event of a run: `type` first (readers look for it in the first bytes), then the envelope."""

    type: str
    run_id: str
    seq: int = Field(ge=0)
    conversation_id: int | None
    terminal: ClassVar[bool] = False

    @classmethod
    def build(cls, env: Envelope, seq: int, **fields: Any) -> Self:
        """The validated event."""
        return cls(run_id=env.run_id, seq=seq, conversation_id=env.conversation_id, **fields)

    def envelope(self) -> Envelope:
        return Envelope(self.run_id, self.conversation_id)


class StatusEvent(RunEvent):
    """Progress for the user; the first one (seq 1) acknowledges that the message is stored."""

    type: Literal["status"] = "status"
    message: str

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, message: str) -> str:
        return cls.build(env, seq, message=message).model_dump_json()


_encode_str = json.encoder.encode_basestring  # the C encoder; output equal to the model's (tests prove it)


class TextDeltaEvent(RunEvent):
    """More answer text (coalesced; payload and suggestion blocks are held back)."""

    type: Literal["text_delta"] = "text_delta"
    text: str

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, text: str) -> str:
        """Equal to `build(...).model_dump_json()` (a property test proves it), without validating: the hot path."""
        if not text.isascii():
            text.encode()  # a lone surrogate raises here, as the model's serializer would
        return f'{{"type":"text_delta",{env.head}{seq}{env.tail},"text":{_encode_str(text)}}}'


class ToolStartEvent(RunEvent):
    """The model called a tool."""

    type: Literal["tool_start"] = "tool_start"
    tool: str
    input: dict[str, Any]
    tool_use_id: str

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, input: dict[str, Any], tool_use_id: str) -> str:
        return cls.build(env, seq, tool=tool, input=input, tool_use_id=tool_use_id).model_dump_json()


class ToolProgressEvent(RunEvent):
    """A streaming tool reports progress."""

    type: Literal["tool_progress"] = "tool_progress"
    tool: str
    stage: str
    message: str
    progress: float | None = None
    data: Any = None

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, stage: str, message: str, progress: float | None, data: Any) -> str:
        return cls.build(env, seq, tool=tool, stage=stage, message=message, progress=progress, data=data).model_dump_json()


class ToolCompleteEvent(RunEvent):
    """The tool finished; its card renders where `[[tool:<index>]]` is in the text."""

    type: Literal["tool_complete"] = "tool_complete"
    tool: str
    index: int = Field(ge=0)

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, index: int) -> str:
        return cls.build(env, seq, tool=tool, index=index).model_dump_json()


class ToolApprovalEvent(RunEvent):
    """The tool needs the user's approval: answer with `chat.approve` (or POST .../approve)."""

    type: Literal["tool_approval"] = "tool_approval"
    tool: str
    input: dict[str, Any]
    tool_use_id: str

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, input: dict[str, Any], tool_use_id: str) -> str:
        return cls.build(env, seq, tool=tool, input=input, tool_use_id=tool_use_id).model_dump_json()


class CompleteEvent(RunEvent):
    """Terminal: the answer."""

    type: Literal["complete"] = "complete"
    payload: CompletePayload
    terminal: ClassVar[bool] = True

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, payload: CompletePayload) -> str:
        return cls.build(env, seq, payload=payload).model_dump_json()


class ErrorEvent(RunEvent):
    """Terminal: the run failed (or was interrupted); what was streamed is saved."""

    type: Literal["error"] = "error"
    code: ErrorCode
    message: str
    terminal: ClassVar[bool] = True

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, code: ErrorCode, message: str | None = None) -> str:
        return error_event(code, message, run_id=env.run_id, seq=seq, conversation_id=env.conversation_id).model_dump_json()


class CancelledEvent(RunEvent):
    """Terminal: the user cancelled; what was streamed is saved."""

    type: Literal["cancelled"] = "cancelled"
    terminal: ClassVar[bool] = True

    @classmethod
    def wire(cls, env: Envelope, seq: int) -> str:
        return cls.build(env, seq).model_dump_json()


class FrameError(_Frame):
    """A refusal outside any run's event sequence (no seq); the socket stays open. Also every HTTP error body."""

    type: Literal["error"] = "error"
    code: ErrorCode
    message: str
    run_id: str | None = Field(default=None, exclude_if=_omit_none)

    def wire(self) -> str:
        return self.model_dump_json()


RUN_EVENTS: tuple[type[RunEvent], ...] = (
    StatusEvent, TextDeltaEvent, ToolStartEvent, ToolProgressEvent, ToolCompleteEvent, ToolApprovalEvent,
    CompleteEvent, ErrorEvent, CancelledEvent,
)
SERVER_EVENTS: tuple[type[_Frame], ...] = (*RUN_EVENTS, FrameError)
assert {m.model_fields["type"].default for m in RUN_EVENTS if m.terminal} == TERMINAL_TYPES


@overload
def error_event(code: ErrorCode, message: str | None = None, *, run_id: str | None = None, seq: None = None,
                conversation_id: int | None = None) -> FrameError: ...
@overload
def error_event(code: ErrorCode, message: str | None = None, *, run_id: str, seq: int,
                conversation_id: int | None) -> ErrorEvent: ...
def error_event(code: ErrorCode, message: str | None = None, *, run_id: str | None = None, seq: int | None = None,
                conversation_id: int | None = None) -> ErrorEvent | FrameError:
    """The one error builder: a run's terminal `error` when `seq` is given, else a frame-level refusal.

    `message` defaults to the code's meaning (chat/errors.py)."""
    text = message or (ERRORS[code].meaning if code in ERRORS else "")  # an unknown code fails validation below
    if seq is not None:
        return ErrorEvent(run_id=run_id or "", seq=seq, conversation_id=conversation_id, code=code, message=text)
    return FrameError(code=code, message=text, run_id=run_id)


# ---- the published schema -------------------------------------------------------------------------

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
    from pydantic.json_schema import models_json_schema

    refs, top = models_json_schema([(m, mode) for m in models], ref_template="#/$defs/{model}")
    return {"$schema": SCHEMA_DIALECT, "title": title, "description": description,
            "oneOf": [refs[(m, mode)] for m in models], "$defs": top["$defs"]}


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
