"""OpenAI Chat Completions (OpenAI itself or any compatible server: vLLM, Ollama, llama.cpp, LM Studio, LiteLLM)
through the official `openai` SDK's async streaming, mapped to provider events exactly as the Anthropic provider does.

The engine speaks Anthropic-style messages (text, tool_use, tool_result, image and document blocks); this module
translates them to Chat Completions messages on the way out and the streamed chunks back into provider events.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

from chat.providers.base import (
    MessageEnd,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    SdkProvider,
    TextDelta,
    ToolInputDelta,
    ToolUseEnd,
    ToolUseStart,
    Usage,
    parse_tool_input,
)

log = logging.getLogger(__name__)

# Chat Completions finish reasons in the engine's (Anthropic's) vocabulary.
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
# OpenAI's error `type`/`code` decides first (mid-stream errors carry no status); then the HTTP status.
_CODE_BY_TYPE = {
    "rate_limit_exceeded": "rate_limited",
    "rate_limit_error": "rate_limited",
    "insufficient_quota": "auth_error",
    "invalid_api_key": "auth_error",
    "authentication_error": "auth_error",
    "permission_error": "auth_error",
    "invalid_request_error": "bad_request",
    "context_length_exceeded": "bad_request",
    "model_not_found": "bad_request",
    "not_found_error": "bad_request",
    "server_error": "provider_unavailable",
    "api_error": "provider_unavailable",
    "overloaded_error": "overloaded",
    "service_unavailable": "overloaded",
    "timeout": "timeout",
}
_CODE_BY_STATUS = {
    400: "bad_request", 404: "bad_request", 413: "bad_request", 422: "bad_request",
    401: "auth_error", 403: "auth_error",
    408: "timeout", 504: "timeout",
    429: "rate_limited", 503: "overloaded", 529: "overloaded",
}


class OpenAIProvider(SdkProvider):
    """Streams one Chat Completions call as provider events; retries only while nothing has been yielded."""

    name = "openai"
    supports_tools = True
    is_offline = False
    supports_images = True  # image_url content parts with data: URLs
    supports_documents = False  # PDFs: most compatible servers take none; OpenAI's `file` parts are opt-in below
    server_label = "OpenAI"

    def __init__(self, *, send_documents: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self.supports_documents = send_documents

    @classmethod
    def from_settings(cls, settings: Any) -> OpenAIProvider:
        """Key, base URL and timeouts from settings (OPENAI_API_KEY, OPENAI_BASE_URL, CHAT_PROVIDER_*)."""
        return cls(api_key=settings.OPENAI_API_KEY or None, base_url=settings.OPENAI_BASE_URL,
                   send_documents=settings.CHAT_OPENAI_SEND_DOCUMENTS, **cls.retry_options(settings))

    @classmethod
    def check_settings(cls, settings: Any) -> list[str]:
        """Configuration mistakes that would make every turn fail (reported by `manage.py check`)."""
        import os

        if not (settings.OPENAI_API_KEY or settings.OPENAI_BASE_URL or os.environ.get("OPENAI_API_KEY")):
            return ["CHAT_PROVIDER is `openai` but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set."]
        return []

    def _make_client(self, api_key: str | None) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=self.base_url,
            max_retries=self.max_retries,  # the SDK retries 408/409/429/5xx and connection errors
            timeout=self.timeout,
            http_client=self._http_client,
        )

    async def _open(self, client: openai.AsyncOpenAI, kwargs: dict[str, Any]) -> Any:
        return await client.chat.completions.create(**kwargs)

    def _accumulator(self) -> _Accumulator:
        return _Accumulator()

    def request_kwargs(self, request: ProviderRequest) -> dict[str, Any]:
        """The SDK call's arguments: the system prompt as the first message, tools as functions, usage requested."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for message in request.messages:
            messages.extend(self.convert_message(message))
        kwargs: dict[str, Any] = {
            "model": request.model, "messages": messages, "stream": True, "max_tokens": request.max_tokens,
            "stream_options": {"include_usage": True},  # the last chunk carries the usage
        }
        if request.tools:
            kwargs["tools"] = [tool_definition(t) for t in request.tools]
            kwargs["tool_choice"] = "none" if request.tool_choice == "none" else "auto"
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        return kwargs

    def convert_message(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """One Anthropic-style message as Chat Completions messages (tool results become `tool` messages)."""
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str) or content is None:
            return [{"role": role, "content": content or ""}]
        if role == "assistant":
            text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
            calls = [
                {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})}}
                for b in content if b.get("type") == "tool_use"
            ]
            out: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                out["tool_calls"] = calls
            return [out]
        tool_messages: list[dict[str, Any]] = []
        parts: list[dict[str, Any]] = []
        for block in content:
            kind = block.get("type")
            if kind == "tool_result":
                tool_messages.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": _result_text(block)})
            elif kind == "text":
                parts.append({"type": "text", "text": block.get("text", "")})
            elif kind == "image" and self.supports_images:
                source = block.get("source", {})
                parts.append({"type": "image_url", "image_url": {"url": f"data:{source.get('media_type')};base64,{source.get('data')}"}})
            elif kind == "document" and self.supports_documents:
                source = block.get("source", {})
                parts.append({"type": "file", "file": {
                    "filename": block.get("title") or "document.pdf",
                    "file_data": f"data:{source.get('media_type')};base64,{source.get('data')}",
                }})
            elif kind in ("image", "document"):
                name = block.get("title") or kind
                parts.append({"type": "text", "text": f"[{name}: attached, but this model server cannot read {kind}s]"})
        # tool results answer the previous assistant message's calls, so they come first
        out_messages = tool_messages
        if parts:
            only_text = all(p["type"] == "text" for p in parts)
            out_messages.append({"role": role, "content": "\n\n".join(p["text"] for p in parts) if only_text else parts})
        return out_messages

    def _error_parts(self, exc: BaseException) -> tuple[str, int | None, str]:
        status: int | None = None
        detail = ""
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            code = "timeout"
        elif isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
            code = "provider_unavailable"
        elif isinstance(exc, openai.APIError):  # an HTTP error status, or an error object mid-stream (no status)
            status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
            code = (_CODE_BY_TYPE.get(str(exc.code or "")) or _CODE_BY_TYPE.get(str(exc.type or ""))
                    or (_CODE_BY_STATUS.get(status) if status else None)
                    or ("provider_unavailable" if status is None or status >= 500 else "provider_error"))
            body = exc.body
            error = body.get("error", body) if isinstance(body, dict) else None
            detail = str(error.get("message") or "") if isinstance(error, dict) else exc.message
            status = status if status is not None else 200
        elif isinstance(exc, openai.OpenAIError) and "api_key" in str(exc):
            code, detail = "auth_error", "no API key configured"  # the SDK found no credentials at all
        else:
            code, detail = "provider_error", f"{type(exc).__name__}: {exc}"
        return code, status, detail


def tool_definition(tool: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic-style tool definition as a Chat Completions function tool."""
    return {"type": "function", "function": {
        "name": tool["name"], "description": tool.get("description", ""),
        "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
    }}


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    text = str(content or "")
    return f"Error: {text}" if block.get("is_error") and not text.startswith("Error") else text


@dataclass
class _ToolCall:
    index: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    started: bool = False
    pending: list[str] = field(default_factory=list)  # fragments that arrived before the id and name


@dataclass
class _Accumulator:
    """Turns chunks into provider events and rebuilds the final message (the API's own shape) for `raw`."""

    id: str = ""
    model: str = ""
    text: list[str] = field(default_factory=list)
    tools: dict[int, _ToolCall] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    raw_usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    closed: bool = False
    complete = False  # the usage chunk follows the finish reason: read to the end of the stream

    def end(self) -> list[ProviderEvent]:
        if self.finish_reason is None:
            raise ProviderError("provider_unavailable", "OpenAI: the stream ended before a finish reason", retryable=True, status=200)
        return [*self.close_tools(), self.message_end()]

    def feed(self, chunk: Any) -> list[ProviderEvent]:
        self.id = self.id or (chunk.id or "")
        self.model = self.model or (chunk.model or "")
        out: list[ProviderEvent] = []
        if chunk.usage is not None:  # the last chunk (choices empty) with stream_options.include_usage
            self.raw_usage = chunk.usage.model_dump(mode="json", exclude_none=True)
            details = chunk.usage.prompt_tokens_details
            cached = (details.cached_tokens or 0) if details is not None else 0
            # prompt_tokens includes cached tokens; the engine counts them apart, as Anthropic's usage does
            self.usage = Usage(input_tokens=max((chunk.usage.prompt_tokens or 0) - cached, 0),
                               output_tokens=chunk.usage.completion_tokens or 0, cache_read_tokens=cached)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue  # n > 1 is never requested
            delta = choice.delta
            if delta is not None and delta.content:
                self.text.append(delta.content)
                out.append(TextDelta(delta.content))
            for call in (delta.tool_calls or ()) if delta is not None else ():
                out += self._tool_delta(call)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return out

    def _tool_delta(self, call: Any) -> list[ProviderEvent]:
        tool = self.tools.setdefault(call.index, _ToolCall(call.index))
        out: list[ProviderEvent] = []
        if call.id:
            tool.id = call.id
        fn = call.function
        if fn is not None and fn.name and not tool.started:
            tool.name = fn.name
        fragment = fn.arguments if fn is not None and fn.arguments else ""
        if not tool.started and tool.name:
            tool.id = tool.id or f"call_{tool.index}"  # some servers send no id; the loop needs one to pair results
            tool.started = True
            out.append(ToolUseStart(tool.id, tool.name))
            for early in tool.pending:
                out.append(ToolInputDelta(tool.id, early))
            tool.pending.clear()
        if fragment:
            tool.arguments.append(fragment)
            if tool.started:
                out.append(ToolInputDelta(tool.id, fragment))
            else:
                tool.pending.append(fragment)
        return out

    def close_tools(self) -> list[ProviderEvent]:
        """Every tool call, in index order, as finished (Chat Completions has no per-call stop event)."""
        out: list[ProviderEvent] = []
        for index in sorted(self.tools):
            tool = self.tools[index]
            if not tool.started:
                tool.id, tool.name, tool.started = tool.id or f"call_{index}", tool.name or "unknown", True
                out.append(ToolUseStart(tool.id, tool.name))
            parsed, error = parse_tool_input("".join(tool.arguments))
            out.append(ToolUseEnd(tool.id, tool.name, parsed, input_error=error))
        self.closed = True
        return out

    def message_end(self) -> MessageEnd:
        reason = self.finish_reason or "stop"
        stop_reason = "tool_use" if self.tools else STOP_REASONS.get(reason, reason)  # Ollama says "stop" with calls
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.tools:
            message["tool_calls"] = [
                {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": "".join(t.arguments)}}
                for _, t in sorted(self.tools.items())
            ]
        raw = {"id": self.id, "object": "chat.completion", "model": self.model,
               "choices": [{"index": 0, "message": message, "finish_reason": reason}], "usage": self.raw_usage}
        return MessageEnd(stop_reason=stop_reason, usage=Usage(self.usage.input_tokens, self.usage.output_tokens,
                                                               cache_read_tokens=self.usage.cache_read_tokens), raw=raw)
