"""AG-UI: a `RunAgentInput` as a v1 turn, and the run's v1 events as AG-UI events (the official models and encoder)."""
from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError

from chat.api.interop.common import InlineFile, assistant_message_id, base64_decode, client_message_id, data_url_decode, run_events, strip_markers
from chat.events import ChatSend
from chat.events.errors import BadRequest
from chat.turns.clients import ClientTool, ClientToolResult, TurnExtras

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what the model APIs accept as a tool name
MAX_THREAD_ID = 200
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def run_input_parse(data: Any) -> RunAgentInput:
    """The request body as AG-UI's own `RunAgentInput`; anything else is `bad_frame`."""
    try:
        return RunAgentInput.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(f"not an AG-UI RunAgentInput: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a multimodal content list (files: `inline_files`)."""
    if isinstance(content, str):
        return content
    return "".join(str(getattr(part, "text", "") or "") for part in content or [])


def inline_files(run_input: RunAgentInput) -> list[InlineFile]:
    """The image and document parts of the new user message, with their data (a `data` source, or a `url` source that is
    a base64 data: URL), in order; audio, video and sources the server would have to fetch are `bad_frame`."""
    last = run_input.messages[-1] if run_input.messages else None
    content: Any = getattr(last, "content", None)
    if last is None or _role(last) != "user" or not isinstance(content, list):
        return []
    files: list[InlineFile] = []
    for i, part in enumerate(p for p in content if getattr(p, "type", "text") != "text"):
        what = f"content part {i} ({part.type})"
        source = getattr(part, "source", None)
        if part.type not in ("image", "document") or source is None:
            raise BadRequest(f"{what}: only text, images and documents (PDF) can be sent")
        if source.type == "data":
            media_type, data = source.mime_type, base64_decode(source.value, what=what)
        elif source.type == "url":
            media_type, data = data_url_decode(source.value, what=what)
            media_type = source.mime_type or media_type
        else:
            raise BadRequest(f"{what}: only a file's own data is accepted (a data source or a base64 data: URL)")
        name = (part.metadata or {}).get("filename") if isinstance(part.metadata, dict) else None
        files.append(InlineFile(name=str(name or f"attachment-{i + 1}"), media_type=media_type, data=data))
    return files


def _role(message: Any) -> str:
    return str(getattr(message, "role", ""))


def state_of(run_input: RunAgentInput) -> dict[str, Any] | None:
    """The run's shared state (`state`), an object or nothing; anything else is `bad_frame`."""
    state = run_input.state
    if state is None:
        return None
    if not isinstance(state, dict):
        raise BadRequest("state must be a JSON object")
    return state


def turn_input(run_input: RunAgentInput, *, attachments: list[str] | None = None) -> tuple[ChatSend, TurnExtras]:
    """The v1 frame and the extras of one AG-UI run: only the trailing new input counts (the last user message, or
    the trailing `tool` messages answering the last run's frontend tool calls); earlier messages are never used. The
    message's files are `attachments`, the ids `inline_files` were stored under."""
    thread_id = run_input.thread_id
    if not 0 < len(thread_id) <= MAX_THREAD_ID:
        raise BadRequest(f"threadId must be 1-{MAX_THREAD_ID} characters")
    messages = list(run_input.messages)
    if not messages:
        raise BadRequest("messages is empty: the last message must be the user's new message")
    results: list[ClientToolResult] = []
    while messages and _role(messages[-1]) == "tool":
        msg = messages.pop()
        results.insert(0, ClientToolResult(tool_use_id=str(getattr(msg, "tool_call_id", "")), content=_text(getattr(msg, "content", ""))))
    last = run_input.messages[-1]
    if not results and _role(last) != "user":
        raise BadRequest("the last message must be a user message or tool results")
    fp = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
    given = fp.get("context")
    context: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    if isinstance(fp.get("page"), str) and fp["page"]:
        context["current_page"] = fp["page"]
    if run_input.context:
        context["page_data"] = [{"description": c.description, "value": c.value} for c in run_input.context]
    tools: list[ClientTool] = []
    for tool in run_input.tools or []:
        if not TOOL_NAME.match(tool.name):
            raise BadRequest(f"tool name {tool.name[:80]!r} must match {TOOL_NAME.pattern}")
        params = tool.parameters if isinstance(tool.parameters, dict) and tool.parameters else EMPTY_SCHEMA
        tools.append(ClientTool(name=tool.name, description=str(getattr(tool, "description", "") or ""), parameters=params))
    try:
        frame = ChatSend(client_message_id=client_message_id(str(last.id)), message="" if results else _text(getattr(last, "content", "")),
                         context=context, attachments=None if results else attachments, state=state_of(run_input) or None)
    except ValidationError as exc:
        raise BadRequest(f"not a valid message: {exc.errors()[0]['msg']}") from None
    return frame, TurnExtras(thread_id=thread_id, client_tools=tuple(tools), tool_results=tuple(results))


class AguiStream:
    """Translates one run's v1 events into AG-UI events, keeping every START matched by its END."""

    def __init__(self, *, thread_id: str, run_id: str, pagechat_run_id: str, state: dict[str, Any] | None = None) -> None:
        self.thread_id = thread_id
        self.state = state  # the client's state: echoed as STATE_SNAPSHOT first, its changes follow as STATE_DELTA
        self.run_id = run_id  # the client's runId, echoed
        self.pagechat_run_id = pagechat_run_id
        self.encoder = EventEncoder()
        self.message_id: str | None = None  # the stored assistant message's id
        self.text_id: str | None = None  # the open text message
        self.segments = 0
        self.started_tool: str | None = None  # the last tool_start's id (its tool_complete follows it)
        self.completed: dict[int, str] = {}  # v1 tool_complete index (= its tool_history index) -> tool_use id

    async def _message_id(self) -> str:
        if self.message_id is None:
            self.message_id = await assistant_message_id(self.pagechat_run_id)
        return self.message_id

    def _text_end(self) -> list[BaseEvent]:
        if self.text_id is None:
            return []
        ended, self.text_id = self.text_id, None
        return [TextMessageEndEvent(message_id=ended)]

    async def translate(self, ev: dict[str, Any]) -> list[BaseEvent]:
        """The AG-UI events for one v1 event (the terminal one included)."""
        kind = ev["type"]
        if kind == "status":
            return [] if ev.get("seq") == 1 else [CustomEvent(name="pagechat.status", value=ev)]
        if kind == "text_delta":
            text = strip_markers(ev["text"])
            if not text:
                return []
            out: list[BaseEvent] = []
            if self.text_id is None:
                base = await self._message_id()
                self.text_id = base if self.segments == 0 else f"{base}.{self.segments}"
                self.segments += 1
                out.append(TextMessageStartEvent(message_id=self.text_id, role="assistant"))
            out.append(TextMessageContentEvent(message_id=self.text_id, delta=text))
            return out
        if kind == "tool_start":
            out = self._text_end()
            self.started_tool = ev["tool_use_id"]
            out += [
                ToolCallStartEvent(tool_call_id=ev["tool_use_id"], tool_call_name=ev["tool"], parent_message_id=await self._message_id()),
                ToolCallArgsEvent(tool_call_id=ev["tool_use_id"], delta=json.dumps(ev["input"])),
                ToolCallEndEvent(tool_call_id=ev["tool_use_id"]),
            ]
            return out
        if kind == "state":  # a tool changed the shared state: the RFC 6902 patch from the last state the client has
            return [StateDeltaEvent(delta=ev["delta"])]
        if kind in ("tool_progress", "tool_approval"):
            return [CustomEvent(name=f"pagechat.{kind}", value=ev)]
        if kind == "tool_complete":  # v1 carries no output here: the results follow from the complete payload
            if self.started_tool is not None:
                self.completed[int(ev["index"])] = self.started_tool
            return []
        if kind == "complete":
            payload = ev["payload"]
            out = self._text_end()
            history = payload.get("tool_history", [])
            for index, call_id in sorted(self.completed.items()):
                if index >= len(history):
                    continue
                item = history[index]
                out.append(ToolCallResultEvent(message_id=f"{await self._message_id()}.tool.{index}", tool_call_id=call_id,
                                               content=str(item.get("output", "")), role="tool"))
            if payload.get("sources"):  # what the answer cites as [n] (docs/ag-ui.md), before the payload that repeats them
                out.append(CustomEvent(name="pagechat.sources", value=payload["sources"]))
            out.append(CustomEvent(name="pagechat.complete", value=payload))
            out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id))
            return out
        if kind == "cancelled":
            return [*self._text_end(), RunErrorEvent(message="The run was cancelled.", code="cancelled")]
        if kind == "client_tool_call":  # never here: a standard client's tools end the run instead of being asked for
            return []
        # `error`: the run's terminal error, or a resync (then the answer is in the conversation over REST)
        return [*self._text_end(), RunErrorEvent(message=str(ev.get("message") or "error"), code=str(ev.get("code") or "internal"))]

    async def events(self, *, user: Any) -> AsyncIterator[BaseEvent]:
        """RUN_STARTED, then the translation of every v1 event of the run; nothing after RUN_FINISHED/RUN_ERROR."""
        yield RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)
        if self.state is not None:
            yield StateSnapshotEvent(snapshot=self.state)
        async for ev in run_events(user=user, run_id=self.pagechat_run_id):
            for out in await self.translate(ev):
                yield out
                if isinstance(out, (RunFinishedEvent, RunErrorEvent)):
                    return

    async def sse(self, *, user: Any) -> AsyncIterator[str]:
        """The events as AG-UI's encoder frames them: `data: <camelCase JSON>\\n\\n`."""
        async for event in self.events(user=user):
            yield self.encoder.encode(event)
