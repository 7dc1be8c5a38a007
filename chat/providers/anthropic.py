"""The Anthropic Messages API (or any Anthropic-compatible server) through the official SDK's async streaming."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2

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

# The API's error `type` decides the code; the HTTP status is the fallback (mid-stream errors arrive with 200).
_CODE_BY_TYPE = {
    "rate_limit_error": "rate_limited",
    "overloaded_error": "overloaded",
    "api_error": "provider_unavailable",
    "timeout_error": "timeout",
    "invalid_request_error": "bad_request",
    "request_too_large": "bad_request",
    "not_found_error": "bad_request",
    "authentication_error": "auth_error",
    "permission_error": "auth_error",
    "billing_error": "auth_error",
}
_CODE_BY_STATUS = {
    400: "bad_request", 404: "bad_request", 413: "bad_request", 422: "bad_request",
    401: "auth_error", 403: "auth_error",
    408: "timeout", 504: "timeout",
    429: "rate_limited", 529: "overloaded",
}


class AnthropicProvider(SdkProvider):
    """Streams one Messages API call as provider events; retries only while nothing has been yielded."""

    name = "anthropic"
    supports_tools = True
    is_offline = False
    generates_titles = True
    supports_images = True
    supports_documents = True
    server_label = "Anthropic"

    def __init__(self, *, prompt_caching: bool = True, **options: Any) -> None:
        super().__init__(**options)
        self.prompt_caching = prompt_caching

    @classmethod
    def from_settings(cls, settings: Any) -> AnthropicProvider:
        """Key, base URL and timeouts from settings (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, CHAT_PROVIDER_*)."""
        return cls(api_key=settings.ANTHROPIC_API_KEY or None, base_url=settings.ANTHROPIC_BASE_URL,
                   prompt_caching=settings.CHAT_PROMPT_CACHING, **cls.retry_options(settings))

    def _make_client(self, api_key: str | None) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=self.base_url,
            max_retries=self.max_retries,  # the SDK retries 408/409/429/5xx/529 and connection errors
            timeout=self.timeout,
            http_client=self._http_client,
        )

    async def _open(self, client: anthropic.AsyncAnthropic, kwargs: dict[str, Any]) -> Any:
        # The raw event stream, not messages.stream(): its accumulator raises on malformed tool JSON,
        # which must become a ToolUseEnd with input_error instead.
        return await client.messages.create(**kwargs)

    def _accumulator(self) -> _Accumulator:
        return _Accumulator()

    def request_kwargs(self, request: ProviderRequest) -> dict[str, Any]:
        """The SDK call's arguments: system top-level, tools only when given, temperature through the body."""
        # A system-role message is refused by the API (and by Ollama); fold it into the top-level system.
        system_parts = [request.system] if request.system else []
        messages: list[dict[str, Any]] = []
        for message in request.messages:
            if message.get("role") == "system":
                content = message.get("content")
                system_parts.append(content if isinstance(content, str) else json.dumps(content))
            else:
                messages.append(message)
        kwargs: dict[str, Any] = {
            "model": request.model, "max_tokens": request.max_tokens, "messages": messages, "stream": True,
        }
        if system_parts:
            kwargs["system"] = "\n\n".join(system_parts)
        if request.tools:
            kwargs["tools"] = request.tools
            kwargs["tool_choice"] = {"type": "none" if request.tool_choice == "none" else "auto"}
        if request.temperature is not None:
            kwargs["extra_body"] = {"temperature": request.temperature}  # not a keyword argument in SDK 2.x
        if self.prompt_caching:
            _cache_breakpoints(kwargs)
        return kwargs

    def _error_parts(self, exc: BaseException) -> tuple[str, int | None, str]:
        status: int | None = None
        detail = ""
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            code = _CODE_BY_TYPE.get(str(exc.type or "")) or _CODE_BY_STATUS.get(status) or (
                "provider_unavailable" if status >= 500 else "provider_error")
            detail = exc.api_message or ""
        elif isinstance(exc, (anthropic.APITimeoutError, httpx2.TimeoutException)):
            code = "timeout"
        elif isinstance(exc, (anthropic.APIConnectionError, httpx2.TransportError)):
            code = "provider_unavailable"
        elif isinstance(exc, TypeError) and "authentication" in str(exc):
            code, detail = "auth_error", "no API key configured"  # the SDK found no credentials at all
        else:
            code, detail = "provider_error", f"{type(exc).__name__}: {exc}"
        return code, status, detail


@dataclass
class _Accumulator:
    """Turns raw stream events into provider events and rebuilds the final message for `raw`."""

    message: dict[str, Any] = field(default_factory=dict)
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    json_parts: dict[int, list[str]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stopped: bool = False

    @property
    def complete(self) -> bool:
        return self.stopped

    def end(self) -> list[ProviderEvent]:
        if not self.stopped:
            raise ProviderError("provider_unavailable", "Anthropic: the stream ended before message_stop", retryable=True, status=200)
        return [self.message_end()]

    def feed(self, event: Any) -> list[ProviderEvent]:
        kind = event.type
        if kind == "message_start":
            self.message = event.message.model_dump(mode="json")
            usage = event.message.usage
            self.usage.input_tokens = usage.input_tokens or 0
            self.usage.output_tokens = usage.output_tokens or 0
            self.usage.cache_read_tokens = getattr(usage, "cache_read_input_tokens", None) or 0
            self.usage.cache_write_tokens = getattr(usage, "cache_creation_input_tokens", None) or 0
        elif kind == "content_block_start":
            block = event.content_block.model_dump(mode="json", exclude_none=True)
            self.blocks[event.index] = block
            if block["type"] == "tool_use":
                self.json_parts[event.index] = []
                return [ToolUseStart(block["id"], block["name"])]
        elif kind == "content_block_delta":
            block = self.blocks.get(event.index, {})
            delta = event.delta
            if delta.type == "text_delta":
                block["text"] = block.get("text", "") + delta.text
                return [TextDelta(delta.text)]
            if delta.type == "input_json_delta" and event.index in self.json_parts:
                self.json_parts[event.index].append(delta.partial_json)
                return [ToolInputDelta(block["id"], delta.partial_json)]
            if delta.type == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.thinking
            elif delta.type == "signature_delta":
                block["signature"] = delta.signature
        elif kind == "content_block_stop" and event.index in self.json_parts:
            block = self.blocks[event.index]
            raw = "".join(self.json_parts[event.index])
            parsed, error = parse_tool_input(raw)
            block["input"] = parsed
            if error:
                block["raw_input"] = raw  # kept for diagnostics; the API would have sent valid JSON
            return [ToolUseEnd(block["id"], block["name"], parsed, input_error=error)]
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            self.stop_sequence = event.delta.stop_sequence
            self.usage.output_tokens = event.usage.output_tokens  # cumulative, so it replaces
            if event.usage.input_tokens is not None:
                self.usage.input_tokens = event.usage.input_tokens
            if getattr(event.usage, "cache_read_input_tokens", None) is not None:
                self.usage.cache_read_tokens = event.usage.cache_read_input_tokens
            if getattr(event.usage, "cache_creation_input_tokens", None) is not None:
                self.usage.cache_write_tokens = event.usage.cache_creation_input_tokens
        elif kind == "message_stop":
            self.stopped = True
        return []

    def message_end(self) -> MessageEnd:
        stop_reason = self.stop_reason or "end_turn"
        raw = {
            **self.message,
            "content": [self.blocks[i] for i in sorted(self.blocks)],
            "stop_reason": stop_reason,
            "stop_sequence": self.stop_sequence,
            "usage": {**self.message.get("usage", {}), **self.usage.as_dict()},
        }
        usage = Usage(self.usage.input_tokens, self.usage.output_tokens, self.usage.cache_read_tokens, self.usage.cache_write_tokens)
        return MessageEnd(stop_reason=stop_reason, usage=usage, raw=raw)


_EPHEMERAL = {"type": "ephemeral"}


def _cache_breakpoints(kwargs: dict[str, Any]) -> None:
    """Mark the prompt-cache breakpoints (at most 4): the tools, the system prompt, the end of the history before the
    latest user message (stable across this turn's model calls and the next turn) and the request's last message
    (so the next tool round reads everything before it). The request's own lists are copied, never changed."""
    if kwargs.get("tools"):
        tools = list(kwargs["tools"])
        tools[-1] = {**tools[-1], "cache_control": _EPHEMERAL}
        kwargs["tools"] = tools
    if kwargs.get("system"):
        kwargs["system"] = [{"type": "text", "text": kwargs["system"], "cache_control": _EPHEMERAL}]
    messages = list(kwargs["messages"])
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user" and _is_question(m.get("content"))), default=None)
    marks = {len(messages) - 1}
    if last_user is not None and last_user > 0:
        marks.add(last_user - 1)
    for index in sorted(marks):
        if index >= 0:
            messages[index] = _with_cache_control(messages[index])
    kwargs["messages"] = messages


def _is_question(content: Any) -> bool:
    """A user's own message (text, or text with attachments), not a message of tool results."""
    return isinstance(content, str) or (isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content))


def _with_cache_control(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content or []]
    cacheable = [i for i, b in enumerate(blocks) if b.get("type") not in ("thinking", "redacted_thinking") and (b.get("type") != "text" or b.get("text"))]
    if not cacheable:
        return message
    blocks[cacheable[-1]]["cache_control"] = _EPHEMERAL
    return {**message, "content": blocks}
