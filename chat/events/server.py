"""Server -> client: a run's events, each built by its model's `wire()`, and the frame-level error."""
from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, overload

from pydantic import Field

from chat.events.base import TERMINAL_TYPES, Envelope, Frame, RunEvent, omit_none
from chat.events.complete import Change, CompleteEvent
from chat.events.errors import ERRORS, ErrorCode


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


TOOL_TITLE = ("Addition to v1: the tool's title, what people read for it (\"Search articles\"), in the turn's language; "
              "`tool` stays its name. Absent from servers before it.")


class ApprovalField(Frame):
    """One field of a call pending approval, as a person reads it: a label and a plain-text value (never JSON)."""

    label: str
    value: str


class ToolStartEvent(RunEvent):
    """The model called a tool."""

    type: Literal["tool_start"] = "tool_start"
    tool: str
    input: dict[str, Any]
    tool_use_id: str
    title: str | None = Field(default=None, exclude_if=omit_none, description=TOOL_TITLE)

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, input: dict[str, Any], tool_use_id: str, title: str | None = None) -> str:
        return cls.build(env, seq, tool=tool, input=input, tool_use_id=tool_use_id, title=title).model_dump_json()


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
    changes: list[Change] | None = Field(default=None, exclude_if=omit_none, description=(
        "Addition to v1: the records the tool changed, when it declares any (`ToolResult.changes`); the tray tells "
        "the page with `pagechat:changed`"))

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, index: int, changes: list[dict[str, Any]] | None = None) -> str:
        return cls.build(env, seq, tool=tool, index=index, changes=changes or None).model_dump_json()


class ToolApprovalEvent(RunEvent):
    """The tool needs the user's approval: answer with `chat.approve` (or POST .../approve)."""

    type: Literal["tool_approval"] = "tool_approval"
    tool: str
    input: dict[str, Any]
    tool_use_id: str
    title: str | None = Field(default=None, exclude_if=omit_none, description=TOOL_TITLE)
    summary: str | None = Field(default=None, exclude_if=omit_none, description=(
        "Addition to v1: what the call will do, in one sentence of the turn's language, written by the tool from its input "
        "and the database as the user sees it (\"Rename 'Lung Cancer Monitor' to 'Oncology Radar'?\"). Plain text, never "
        "HTML. Absent when the tool does not describe its calls (then show `fields`)."))
    fields: list[ApprovalField] | None = Field(default=None, exclude_if=omit_none, description=(
        "Addition to v1: the call's input as labelled plain-text values, in the tool's order (labels from its input "
        "schema), for a person to judge instead of `input`'s JSON. Absent from servers before it."))

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, input: dict[str, Any], tool_use_id: str, title: str | None = None,
             summary: str | None = None, fields: list[dict[str, str]] | None = None) -> str:
        return cls.build(env, seq, tool=tool, input=input, tool_use_id=tool_use_id, title=title, summary=summary,
                         fields=fields).model_dump_json()


class ClientToolCallEvent(RunEvent):
    """Addition to v1: the model called one of the tools the sending tab offered (`chat.send.client_tools`): that tab
    alone runs it and answers with `chat.tool_result` (or POST .../tool_result) within `timeout_ms`."""

    type: Literal["client_tool_call"] = "client_tool_call"
    tool: str
    input: dict[str, Any]
    tool_use_id: str
    tab_id: str = Field(description="The `tab_id` of the `chat.send` that started the run: only the tab with that id runs the call; "
                                    "other tabs and followers show the card only.")
    timeout_ms: int = Field(ge=0, description="How long the run waits for the answer; then the model is told the page did not answer.")
    title: str | None = Field(default=None, exclude_if=omit_none, description=TOOL_TITLE)

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, tool: str, input: dict[str, Any], tool_use_id: str, tab_id: str, timeout_ms: int,
             title: str | None = None) -> str:
        return cls.build(env, seq, tool=tool, input=input, tool_use_id=tool_use_id, tab_id=tab_id, timeout_ms=timeout_ms,
                         title=title).model_dump_json()


class StateEvent(RunEvent):
    """Addition to v1: the page's shared state (`chat.send.state`) changed during the run (a tool changed it): `state` is
    the whole new state, `delta` the RFC 6902 JSON Patch from the previous one. The page applies it."""

    type: Literal["state"] = "state"
    state: dict[str, Any]
    delta: list[dict[str, Any]] = Field(description="RFC 6902 JSON Patch operations (`op`, `path`, `value`, `from`) from the previous state.")

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, state: dict[str, Any], delta: list[dict[str, Any]]) -> str:
        return cls.build(env, seq, state=state, delta=delta).model_dump_json()


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


class FrameError(Frame):
    """A refusal outside any run's event sequence (no seq); the socket stays open. Also every HTTP error body."""

    type: Literal["error"] = "error"
    code: ErrorCode
    message: str
    run_id: str | None = Field(default=None, exclude_if=omit_none)
    retry_after: int | None = Field(default=None, ge=1, exclude_if=omit_none, description=(
        "Addition to v1: on a `rate_limited` or `budget_exceeded` refusal, the seconds after which the same request can "
        "be accepted (HTTP answers carry it as `Retry-After` too). Absent when not known (runs in progress, open sockets)."
    ))

    def wire(self) -> str:
        return self.model_dump_json()


RUN_EVENTS: tuple[type[RunEvent], ...] = (
    StatusEvent, TextDeltaEvent, ToolStartEvent, ToolProgressEvent, ToolCompleteEvent, ToolApprovalEvent,
    ClientToolCallEvent, StateEvent, CompleteEvent, ErrorEvent, CancelledEvent,
)
SERVER_EVENTS: tuple[type[Frame], ...] = (*RUN_EVENTS, FrameError)
assert {m.model_fields["type"].default for m in RUN_EVENTS if m.terminal} == TERMINAL_TYPES


@overload
def error_event(code: ErrorCode, message: str | None = None, *, run_id: str | None = None, seq: None = None,
                conversation_id: int | None = None, retry_after: int | None = None) -> FrameError: ...
@overload
def error_event(code: ErrorCode, message: str | None = None, *, run_id: str, seq: int,
                conversation_id: int | None) -> ErrorEvent: ...
def error_event(code: ErrorCode, message: str | None = None, *, run_id: str | None = None, seq: int | None = None,
                conversation_id: int | None = None, retry_after: int | None = None) -> ErrorEvent | FrameError:
    """The one error builder: a run's terminal `error` when `seq` is given, else a frame-level refusal (with
    `retry_after` when the refusal says when to try again).

    `message` defaults to the code's meaning (chat/events/errors.py)."""
    text = message or (ERRORS[code].meaning if code in ERRORS else "")  # an unknown code fails validation below
    if seq is not None:
        return ErrorEvent(run_id=run_id or "", seq=seq, conversation_id=conversation_id, code=code, message=text)
    return FrameError(code=code, message=text, run_id=run_id, retry_after=retry_after)
