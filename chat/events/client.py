"""Client -> server: the frames a client sends on the websocket (and POST bodies), and how they are read."""
from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from chat.events.base import Frame
from chat.events.server import FrameError, error_event

InteractionType = Literal["text_input", "value_selected", "action_executed"]


class ClientFrameModel(Frame):
    """What a client sends: strict types, no coercion (`true` is not conversation 1, `"yes"` is not `true`)."""

    model_config = ConfigDict(strict=True)


class ActionMetadata(ClientFrameModel):
    """The button a user clicked: a server action carries the signed token the server gave it."""

    action_identifier: str = Field(min_length=1, max_length=100)
    action_data: Any = None
    token: str | None = Field(default=None, max_length=4096)


class HistoryItem(ClientFrameModel):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=100_000)
    timestamp: str | None = None


CLIENT_TOOL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"  # what the model APIs accept as a tool name
MAX_CLIENT_TOOLS = 16
MAX_STATE_BYTES = 16_384  # the page's state and a tool's payload, as JSON
MAX_CLIENT_TOOL_OUTPUT = 20_000  # what a frontend tool may return (the agent loop's bound for any tool's output)


class ClientToolSpec(ClientFrameModel):
    """A tool the sending tab runs itself (a frontend tool registered with `pagechat.registerTool`)."""

    name: str = Field(pattern=CLIENT_TOOL_NAME)
    title: str | None = Field(default=None, min_length=1, max_length=80, description="What people read for it (\"Switch tab\").")
    description: str = Field(default="", max_length=1000)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}},
                                       description="A JSON Schema object for its input (at most 8 KB as JSON).")
    requires_approval: bool = False


class ChatSend(ClientFrameModel):
    """Send a message (starts a run; a resend of a stored client_message_id starts nothing new; without one the
    server makes one up and every send is a new message)."""

    type: Literal["chat.send"] = "chat.send"
    client_message_id: str | None = Field(default=None, min_length=1, max_length=64)
    conversation_id: int | None = None
    message: str = Field(max_length=100_000)
    context: dict[str, Any] = Field(default_factory=dict)
    interaction_type: InteractionType = "text_input"
    action_metadata: ActionMetadata | None = None
    conversation_history: list[HistoryItem] | None = Field(default=None, max_length=200)
    replace_last: Literal["answer", "question"] | None = Field(default=None, description=(
        "Addition to v1: `answer` regenerates the conversation's last answer (a new run answers the last question "
        "again; `message` is ignored, the question is not stored twice); `question` replaces the last question "
        "with `message` and answers it. A regenerate keeps the replaced answer, marked replaced: out of the conversation the "
        "model and the message list see, listed in the new answer's `earlier_versions`; an edit deletes the replaced "
        "question and its answer. Needs `conversation_id`."
    ))
    attachments: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(default=None, max_length=20, description=(
        "Addition to v1: ids of attachments the sender uploaded (`POST <api>attachments/`) and has not sent yet; they "
        "become the message's attachments (at most `CHAT_MAX_ATTACHMENTS_PER_MESSAGE`). Someone else's, an unknown or "
        "an already sent id is `not_found`."
    ))
    language: str | None = Field(default=None, max_length=35, pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$", description=(
        "Addition to v1: the user's language as a BCP 47 tag (`de`, `pt-BR`; the tray sends its page's language). The "
        "model is told to answer in it. Without it the model is told nothing about the language."
    ))
    tab_id: str | None = Field(default=None, min_length=1, max_length=64, description=(
        "Addition to v1: the sending tab's own id (random, one per page load). A `client_tool_call` of the run names "
        "it: only that tab runs the call."
    ))
    client_tools: list[ClientToolSpec] | None = Field(default=None, max_length=MAX_CLIENT_TOOLS, description=(
        "Addition to v1: tools the sending tab runs itself, offered to the model with the page's for this turn (a "
        "page's tool of the same name wins). Needs `tab_id` and a streaming transport (websocket, SSE): POST /api/chat "
        "refuses them with `streaming_required`."
    ))
    state: dict[str, Any] | None = Field(default=None, description=(
        "Addition to v1: the page's shared state (at most 16 KB as JSON). The model reads it as data; a tool that "
        "changes it sends a `state` event."
    ))

    @model_validator(mode="after")
    def _client_tools_valid(self) -> ChatSend:
        if self.client_tools:
            if self.tab_id is None:
                raise ValueError("client_tools need tab_id")
            names = [t.name for t in self.client_tools]
            if len(set(names)) != len(names):
                raise ValueError("client_tools names must be unique")
            for tool in self.client_tools:
                problem = json_schema_problem(tool.parameters)
                if problem:
                    raise ValueError(f"client_tools[{tool.name}].parameters: {problem}")
        if self.state is not None and len(json.dumps(self.state)) > MAX_STATE_BYTES:
            raise ValueError(f"state is larger than {MAX_STATE_BYTES} bytes as JSON")
        return self


class ChatCancel(ClientFrameModel):
    """Cancel one of the user's runs, wherever it runs."""

    type: Literal["chat.cancel"]
    run_id: str = Field(min_length=1, max_length=64)


class ChatResume(ClientFrameModel):
    """Replay a run's events after `after_seq`, then follow it live."""

    type: Literal["chat.resume"]
    run_id: str = Field(min_length=1, max_length=64)
    after_seq: int = Field(default=0, ge=0)


class ChatApprove(ClientFrameModel):
    """Answer a `tool_approval`."""

    type: Literal["chat.approve"]
    run_id: str = Field(min_length=1, max_length=64)
    tool_use_id: str = Field(min_length=1, max_length=128)
    approved: bool


def _answer_bounded(answer: Any) -> Any:
    """A tab's answer's payload and state are at most MAX_STATE_BYTES as JSON."""
    for name in ("payload", "state"):
        value = getattr(answer, name)
        if value is not None and len(json.dumps(value)) > MAX_STATE_BYTES:
            raise ValueError(f"{name} is larger than {MAX_STATE_BYTES} bytes as JSON")
    return answer


# the fields of a tab's answer, in the frame and in the HTTP twin's body
ToolUseId = Annotated[str, Field(min_length=1, max_length=128)]
TabId = Annotated[str, Field(min_length=1, max_length=64)]
ToolOutput = Annotated[str, Field(max_length=MAX_CLIENT_TOOL_OUTPUT, description="What the model reads as the tool's result (untrusted text).")]
AnswerPayload = Annotated[dict[str, Any] | None, Field(description="A custom payload card for the answer (at most 16 KB as JSON).")]
AnswerState = Annotated[dict[str, Any] | None, Field(description="The page's state after the tool ran, when it changed (at most 16 KB).")]


class ChatToolResult(ClientFrameModel):
    """Addition to v1: answer a `client_tool_call` (only the tab it names, once)."""

    type: Literal["chat.tool_result"]
    run_id: str = Field(min_length=1, max_length=64)
    tool_use_id: ToolUseId
    tab_id: TabId
    output: ToolOutput
    is_error: bool = False
    payload: AnswerPayload = None
    state: AnswerState = None

    _bounded = model_validator(mode="after")(_answer_bounded)


class ToolResultBody(ClientFrameModel):
    """The answer of a tab to a `client_tool_call` (the body of POST /api/chat/runs/<id>/tool_result): `chat.tool_result`
    without `type` and `run_id`."""

    tool_use_id: ToolUseId
    tab_id: TabId
    output: ToolOutput
    is_error: bool = False
    payload: AnswerPayload = None
    state: AnswerState = None

    _bounded = model_validator(mode="after")(_answer_bounded)


CLIENT_FRAMES: tuple[type[Frame], ...] = (ChatSend, ChatCancel, ChatResume, ChatApprove, ChatToolResult)
ClientFrame = Annotated[ChatSend | ChatCancel | ChatResume | ChatApprove | ChatToolResult, Field(discriminator="type")]
client_frame_adapter: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)
CLIENT_FRAME_TYPES: frozenset[str] = frozenset({"chat.send", "chat.cancel", "chat.resume", "chat.approve", "chat.tool_result"})


def json_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` cannot be a tool's input schema (too large, not a valid JSON Schema, not an object), or None."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if len(json.dumps(schema)) > 8192:
        return "larger than 8192 bytes as JSON"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"not a JSON Schema ({exc.message[:120]})"
    if schema.get("type", "object") != "object":
        return "must describe an object"
    return None


# ---- reading client frames ----------------------------------------------------------------------

MAX_NESTING = 32
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: a 2 MB string in ~15 ms, not ~400
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


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_loads_strict(text: str | bytes) -> Any:
    """`json.loads` refusing what JSON does not have (`NaN`, `Infinity`, `-Infinity`): ValueError like any bad JSON."""
    return json.loads(text, parse_constant=_no_constant)


class ClientJSONError(ValueError):
    """A client's frame or body refused while it is read; `error` is the frame-level error that answers it."""

    def __init__(self, error: FrameError) -> None:
        super().__init__(error.message)
        self.error = error


def client_json(text: str | bytes, max_bytes: int, *, what: str = "frame") -> Any:
    """The JSON value of a client's frame or request body, read the one way every transport reads them: `too_large`
    past `max_bytes`, `bad_frame` nested deeper than MAX_NESTING, `bad_json` for what JSON is not (NaN, Infinity,
    bytes that are not UTF-8), `bad_frame` for text no database keeps (NUL, lone surrogates) anywhere in it.

    Raises ClientJSONError carrying that error; `what` names the input in its message."""
    if len(text) > max_bytes or (isinstance(text, str) and len(text.encode("utf-8", "surrogatepass")) > max_bytes):
        raise ClientJSONError(error_event("too_large", f"{what} is larger than {max_bytes} bytes"))
    try:
        decoded = text.decode("utf-8") if isinstance(text, bytes) else text
    except UnicodeDecodeError:
        raise ClientJSONError(error_event("bad_json", f"{what} is not valid JSON (not UTF-8 text)")) from None
    if _nesting_depth(decoded) > MAX_NESTING:  # decided before parsing: the parser's own limit depends on the stack
        raise ClientJSONError(error_event("bad_frame", f"{what} is nested deeper than {MAX_NESTING} levels"))
    try:
        data = json_loads_strict(decoded)
    except (ValueError, RecursionError):
        raise ClientJSONError(error_event("bad_json", f"{what} is not valid JSON (NaN and Infinity are not JSON)")) from None
    problem = _bad_text(data)
    if problem:
        raise ClientJSONError(error_event("bad_frame", f"{what} contains {problem}"))
    return data


def parse_frame(text: str | None, max_bytes: int) -> ClientFrame | FrameError:
    """A validated client frame, or the FrameError that answers it."""
    if text is None:
        return error_event("bad_frame", "frames must be JSON text")
    try:
        data = client_json(text, max_bytes)
    except ClientJSONError as exc:
        return exc.error
    if not isinstance(data, dict):
        return error_event("bad_frame", "frame must be a JSON object")
    if "type" not in data and "message" in data:
        data["type"] = "chat.send"  # the specs' ChatRequest has no `type`: a bare request is a send
    ftype = data.get("type")
    if not isinstance(ftype, str) or ftype not in CLIENT_FRAME_TYPES:
        return error_event("unknown_type", f"unknown frame type {str(ftype)[:40]!r}")
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
