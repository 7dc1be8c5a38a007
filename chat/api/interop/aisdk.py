"""The AI SDK's UI message stream (protocol v1, as `useChat`'s default transport reads it) from a run's v1 events."""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Literal
from urllib.parse import urljoin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chat.api.interop.common import InlineFile, assistant_message_id, client_message_id, data_url_decode, run_events, strip_markers
from chat.events import ChatSend
from chat.events.errors import BadRequest
from chat.turns.clients import TurnExtras

HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
DONE = "data: [DONE]\n\n"
# an unfinished answer's v1 stop_reason -> the AI SDK's finish reason ("length": its output limit)
FINISH_REASONS = {"max_tokens": "length", "max_iterations": "other"}


class UIPart(BaseModel):
    """A part of a UI message; text and file parts are read (a file's `url` is its base64 data: URL), others ignored."""

    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None
    mediaType: str | None = None
    filename: str | None = None
    url: str | None = None


class UIMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=1000)
    role: Literal["user", "assistant", "system"]
    parts: list[UIPart] = Field(default_factory=list)


class ChatRequest(BaseModel):
    """The default chat transport's body, plus pagechat's own `page` and `context`."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=200)
    messages: list[UIMessage] = Field(default_factory=list, max_length=10_000)
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    messageId: str | None = None
    page: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)


def request_parse(data: Any) -> ChatRequest:
    """The body as the transport sends it; anything else is `bad_frame`."""
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadRequest(f"not an AI SDK chat request: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def _context(req: ChatRequest) -> dict[str, Any]:
    context = dict(req.context)
    if req.page:
        context["current_page"] = req.page
    return context


def _new_message(req: ChatRequest) -> UIMessage:
    if not req.messages or req.messages[-1].role != "user":
        raise BadRequest("the last message must be the user's new message")
    return req.messages[-1]


def inline_files(req: ChatRequest) -> list[InlineFile]:
    """The files of the new message (`file` parts, as `useChat` sends them: a base64 data: URL each), in order."""
    files: list[InlineFile] = []
    for i, part in enumerate(p for p in _new_message(req).parts if p.type == "file"):
        media_type, data = data_url_decode(part.url or "", what=f"file part {i}")
        files.append(InlineFile(name=part.filename or f"attachment-{i + 1}", media_type=part.mediaType or media_type, data=data))
    return files


def turn_input(req: ChatRequest, *, attachments: list[str] | None = None) -> tuple[ChatSend, TurnExtras]:
    """The v1 frame of a submitted message: only the trailing user message is taken (earlier ones are ignored); its
    files are `attachments`, the ids `inline_files` were stored under."""
    last = _new_message(req)
    text = "".join(p.text or "" for p in last.parts if p.type == "text")
    try:
        frame = ChatSend(client_message_id=client_message_id(last.id), message=text, context=_context(req), attachments=attachments)
    except ValidationError as exc:
        raise BadRequest(f"not a valid message: {exc.errors()[0]['msg']}") from None
    return frame, TurnExtras(thread_id=req.id)


def regenerate_context(req: ChatRequest) -> dict[str, Any]:
    """The page context a regenerate request runs with."""
    return _context(req)


def sse(chunk: dict[str, Any]) -> str:
    return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n"


class UIMessageStream:
    """Translates one run's v1 events into UI message chunks; every start is ended before `finish`."""

    def __init__(self, *, run_id: str, base_url: str = "") -> None:
        self.run_id = run_id
        self.base_url = base_url  # the site's root: a source's page (usually a path) becomes an absolute `source-url`
        self.started = False
        self.text_id: str | None = None
        self.segments = 0
        self.started_tool: str | None = None
        self.completed: dict[int, str] = {}  # v1 tool_complete index (= its tool_history index) -> tool call id

    def _text_end(self) -> list[dict[str, Any]]:
        if self.text_id is None:
            return []
        ended, self.text_id = self.text_id, None
        return [{"type": "text-end", "id": ended}]

    async def _start(self) -> list[dict[str, Any]]:
        """`start` with the stored assistant message's id (it exists once the run does more than acknowledge)."""
        if self.started:
            return []
        self.started = True
        return [{"type": "start", "messageId": await assistant_message_id(self.run_id)}]

    async def translate(self, ev: dict[str, Any]) -> list[dict[str, Any]]:
        kind = ev["type"]
        if kind == "status" and ev.get("seq") == 1:
            return []
        out = await self._start()
        if kind == "status":
            out.append({"type": "data-pagechat-status", "data": {"message": ev["message"]}, "transient": True})
        elif kind == "text_delta":
            text = strip_markers(ev["text"])
            if text:
                if self.text_id is None:
                    self.text_id = f"text-{self.segments}"
                    self.segments += 1
                    out.append({"type": "text-start", "id": self.text_id})
                out.append({"type": "text-delta", "id": self.text_id, "delta": text})
        elif kind == "tool_start":
            out += self._text_end()
            call_id = ev["tool_use_id"]
            self.started_tool = call_id
            out += [
                {"type": "tool-input-start", "toolCallId": call_id, "toolName": ev["tool"], "dynamic": True},
                {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": json.dumps(ev["input"])},
                {"type": "tool-input-available", "toolCallId": call_id, "toolName": ev["tool"], "input": ev["input"], "dynamic": True},
            ]
        elif kind in ("tool_progress", "tool_approval", "state"):  # a tool changed the shared state: a data part too
            name = {"tool_progress": "progress", "tool_approval": "approval", "state": "state"}[kind]
            out.append({"type": f"data-pagechat-{name}", "data": {k: v for k, v in ev.items() if k != "type"}, "transient": True})
        elif kind == "tool_complete":
            if self.started_tool is not None:
                self.completed[int(ev["index"])] = self.started_tool
        elif kind == "complete":
            payload = ev["payload"]
            out += self._text_end()
            history = payload.get("tool_history", [])
            for index, call_id in sorted(self.completed.items()):
                if index < len(history):
                    out.append({"type": "tool-output-available", "toolCallId": call_id, "output": history[index].get("output", ""),
                                "dynamic": True})
            out += self._sources(payload.get("sources") or [])
            out.append({"type": "data-pagechat-complete", "data": payload})
            out.append({"type": "finish", "finishReason": FINISH_REASONS.get(payload.get("stop_reason"), "stop")})
        else:  # error (the run's, or a resync) or cancelled
            code = "cancelled" if kind == "cancelled" else str(ev.get("code") or "internal")
            message = "The run was cancelled." if kind == "cancelled" else str(ev.get("message") or "error")
            out += self._text_end()
            out.append({"type": "data-pagechat-error", "data": {"code": code, "message": message}})
            out.append({"type": "error", "errorText": f"{code}: {message}"})
            out.append({"type": "finish", "finishReason": "error"})
        return out

    def _sources(self, sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A `source-url` part per cited source with a page; its `sourceId` is the number the answer cites (`[1]` -> "1")."""
        return [{"type": "source-url", "sourceId": str(s["n"]), "url": urljoin(self.base_url, s["url"]), "title": s["title"]}
                for s in sources if s.get("url")]

    async def sse(self, *, user: Any) -> AsyncIterator[str]:
        """The chunks as SSE `data:` lines, then `data: [DONE]`."""
        async for ev in run_events(user=user, run_id=self.run_id):
            for chunk in await self.translate(ev):
                yield sse(chunk)
                if chunk["type"] == "finish":
                    yield DONE
                    return
