"""OpenAI Chat Completions (OpenAI itself or any compatible server: vLLM, Ollama, llama.cpp, LM Studio, LiteLLM)
through the official `openai` SDK's async streaming, mapped to provider events exactly as the Anthropic provider does.

The engine speaks Anthropic-style messages (text, tool_use, tool_result, image and document blocks); this module
translates them to Chat Completions messages on the way out and the streamed chunks back into provider events.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

import httpx2
import openai

from chat.providers.base import (
    MessageEnd,
    Progress,
    Provider,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    StallGuard,
    TextDelta,
    ToolInputDelta,
    ToolUseEnd,
    ToolUseStart,
    Usage,
    stream_with_retries,
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
_RETRYABLE = frozenset({"rate_limited", "overloaded", "timeout", "provider_unavailable"})
_DESCRIPTIONS = {
    "rate_limited": "rate limit reached",
    "overloaded": "the model is overloaded",
    "timeout": "the model did not answer in time",
    "provider_unavailable": "the model server is unavailable",
    "bad_request": "the model server rejected the request",
    "auth_error": "the model server refused the credentials",
    "provider_error": "the model call failed",
}


class OpenAIProvider(Provider):
    """Streams one Chat Completions call as provider events; retries only while nothing has been yielded."""

    name = "openai"
    supports_tools = True
    is_offline = False
    supports_images = True  # image_url content parts with data: URLs
    supports_documents = False  # PDFs: most compatible servers take none; OpenAI's `file` parts are opt-in below

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        stall_timeout: float = 30.0,
        retry_backoff: float = 0.5,
        send_documents: bool = False,
        http_client: httpx2.AsyncClient | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)  # the key stays out of `options` so it is never echoed
        self._api_key = api_key or None
        self.base_url = base_url or None
        self.max_retries = max_retries
        self.timeout = timeout
        self.stall_timeout = stall_timeout
        self.retry_backoff = retry_backoff
        self.supports_documents = send_documents
        self._http_client = http_client
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> OpenAIProvider:
        """Key, base URL and timeouts from settings (OPENAI_API_KEY, OPENAI_BASE_URL, CHAT_PROVIDER_*)."""
        return cls(
            api_key=settings.OPENAI_API_KEY or None,
            base_url=settings.OPENAI_BASE_URL,
            max_retries=settings.CHAT_PROVIDER_MAX_RETRIES,
            timeout=settings.CHAT_PROVIDER_TIMEOUT,
            stall_timeout=settings.CHAT_PROVIDER_STALL_TIMEOUT,
            send_documents=settings.CHAT_OPENAI_SEND_DOCUMENTS,
        )

    @classmethod
    def check_settings(cls, settings: Any) -> list[str]:
        """Configuration mistakes that would make every turn fail (reported by `manage.py check`)."""
        import os

        if not (settings.OPENAI_API_KEY or settings.OPENAI_BASE_URL or os.environ.get("OPENAI_API_KEY")):
            return ["CHAT_PROVIDER is `openai` but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set."]
        return []

    def _get_client(self) -> openai.AsyncOpenAI:
        """One SDK client per provider instance and event loop (an HTTP pool cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._client is None or (self._http_client is None and self._client_loop is not loop):
            api_key = self._api_key
            if api_key is None and self.base_url is not None:
                api_key = "no-key"  # local servers ignore the key but the SDK wants one
            self._client = openai.AsyncOpenAI(
                api_key=api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,  # the SDK retries 408/409/429/5xx and connection errors
                timeout=self.timeout,
                http_client=self._http_client,
            )
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the SDK client's connection pool (not an injected http_client)."""
        if self._client is not None and self._http_client is None:
            await self._client.close()
        self._client = None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one response; ends with exactly one MessageEnd or raises ProviderError."""
        kwargs = self.request_kwargs(request)
        async for event in stream_with_retries(lambda progress: self._attempt(kwargs, progress),
                                               max_retries=self.max_retries, retry_backoff=self.retry_backoff):
            yield event

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

    async def _attempt(self, kwargs: dict[str, Any], progress: Progress) -> AsyncGenerator[ProviderEvent, None]:
        """One HTTP request and its stream, every failure mapped to ProviderError."""
        try:
            raw_stream = await self._get_client().chat.completions.create(**kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        progress.opened = True
        events = cast(AsyncGenerator[Any, None], aiter(raw_stream))
        acc = _Accumulator()
        try:
            async for chunk in StallGuard(events, timeout=self.stall_timeout, label="OpenAI"):
                for out in acc.feed(chunk):
                    yield out
            if acc.finish_reason is None:
                raise ProviderError("provider_unavailable", "OpenAI: the stream ended before a finish reason",
                                    retryable=True, status=200)
            for out in acc.close_tools():
                yield out
            yield acc.message_end()
        except ProviderError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc
        finally:
            # Also runs on cancellation and when the caller stops iterating: never leave the response open.
            with contextlib.suppress(Exception):
                await events.aclose()
            with contextlib.suppress(Exception):
                await raw_stream.close()

    def _error(self, exc: BaseException) -> ProviderError:
        """Map an SDK/transport failure to a ProviderError whose message carries no key or headers."""
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
        message = f"OpenAI: {_DESCRIPTIONS[code]}" + (f" (HTTP {status})" if status and status != 200 else "")
        if detail:
            message += f": {detail}"
        if self._api_key:
            message = message.replace(self._api_key, "[redacted]")
        return ProviderError(code, message[:500], retryable=code in _RETRYABLE, status=status)


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
            parsed, error = _parse_tool_input("".join(tool.arguments))
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


def _parse_tool_input(raw: str) -> tuple[dict[str, Any], str | None]:
    """The tool input as a dict, or ({}, reason) when the model's JSON is malformed or not an object."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return {}, f"expected a JSON object, got {type(value).__name__}"
    return value, None
