"""The provider contract: one async streaming model call yielding typed provider events."""
from __future__ import annotations

import asyncio
import contextlib
import json
import random
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, cast


@dataclass(slots=True)
class Usage:
    """Tokens of one model call (or summed over a turn). `input_tokens` excludes prompt-cache reads and writes,
    which are counted apart (as Anthropic reports them) because they are priced differently."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: Usage) -> None:
        """Accumulate another call's usage into this one."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens

    def as_dict(self) -> dict[str, int]:
        """Every count, cache counts only when there are any (older records have none)."""
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_tokens or self.cache_write_tokens:
            out.update(cache_read_tokens=self.cache_read_tokens, cache_write_tokens=self.cache_write_tokens)
        return out


@dataclass(slots=True)
class ToolCallRecord:
    """One tool call the model made: the provider's id for it (what its result answers), the tool's name, its input.
    The one declaration of this record: the provider's event, the loop's events and a client's answered call extend it."""

    tool_use_id: str
    name: str
    input: dict[str, Any]


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ToolUseStart:
    tool_use_id: str
    name: str


@dataclass(slots=True)
class ToolInputDelta:
    tool_use_id: str
    partial_json: str


@dataclass(slots=True)
class ToolUseEnd(ToolCallRecord):
    """A finished tool_use block; `input_error` is set when the model's JSON did not parse."""

    input_error: str | None = None


@dataclass(slots=True)
class MessageEnd:
    stop_reason: str
    usage: Usage
    raw: dict[str, Any] = field(default_factory=dict)  # the model's output as the API gave it


ProviderEvent = TextDelta | ToolUseStart | ToolInputDelta | ToolUseEnd | MessageEnd


class StructuredPrompt(Protocol):
    """The structured input a system prompt is written from (chat.prompt.system.PromptInput), as a provider that reads
    it rather than the text sees it: read-only, the same facts the text gives."""

    @property
    def context_text(self) -> str: ...
    @property
    def request_context(self) -> Mapping[str, Any]: ...
    @property
    def interaction_type(self) -> str: ...
    @property
    def tools(self) -> Sequence[tuple[str, str]]: ...
    @property
    def tool_titles(self) -> Mapping[str, str]: ...
    @property
    def page_title(self) -> str: ...
    @property
    def tab_title(self) -> str: ...
    @property
    def payload_instructions(self) -> Sequence[str]: ...
    @property
    def client_actions(self) -> Sequence[tuple[str, str, Sequence[str]]]: ...
    @property
    def server_actions(self) -> Sequence[tuple[str, str, Sequence[str]]]: ...
    @property
    def language(self) -> str | None: ...
    @property
    def error(self) -> Mapping[str, str] | None: ...  # the TROUBLESHOOTING section's bounded fields: message, code, context


@dataclass(slots=True)
class ProviderRequest:
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    model: str
    max_tokens: int
    temperature: float | None = None
    tool_choice: str = "auto"  # "auto" | "none"
    # what `system` was written from, for a provider that reads structure rather than text (the offline model); hosted
    # models send `system` only, and a request built by hand (a test, the eval judge) may leave it None
    prompt: StructuredPrompt | None = None


class ProviderError(Exception):
    """A model call failed; `code` is safe to show a user, `retryable` says whether to try again."""

    def __init__(self, code: str, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.status = status


class Provider(ABC):
    """A model backend chosen by dotted path in settings.CHAT_PROVIDER."""

    name: ClassVar[str] = "base"
    supports_tools: ClassVar[bool] = True
    is_offline: ClassVar[bool] = False  # the UI says so when True
    label: ClassVar[str] = ""  # shown once, as a badge in the tray's header, when not empty (e.g. "Offline model")
    generates_titles: ClassVar[bool] = False  # True: a conversation's title is one short call of this provider
    supports_images: bool = False  # takes Anthropic-style `image` content blocks (attachments)
    supports_documents: bool = False  # takes Anthropic-style `document` (PDF) content blocks

    def __init__(self, **options: Any) -> None:
        self.options = options

    @classmethod
    def from_settings(cls, settings: Any) -> Provider:
        """Build the provider from the engine's settings (`chat.conf.chat_settings`: every CHAT_* with its default,
        any other name read from Django's settings); subclasses read what they need."""
        return cls()

    def model_name(self, configured: str) -> str:
        """The model runs record (admin, diagnostics): the configured CHAT_MODEL unless this provider calls another."""
        return configured
    @classmethod
    def check_settings(cls, settings: Any) -> list[str]:
        """Mistakes in the settings this provider reads (each becomes a `manage.py check` error); none by default."""
        return []

    @abstractmethod
    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one model response; must end with exactly one MessageEnd or raise ProviderError."""


MAX_BACKOFF = 8.0  # seconds: the longest wait between two of a provider's own retries


@dataclass(slots=True)
class Progress:
    """How far one attempt got: retrying is invisible to the caller only while nothing was yielded."""

    opened: bool = False  # HTTP 200 received
    yielded: bool = False  # an event reached the caller


async def stream_with_retries(
    attempt: Callable[[Progress], AsyncGenerator[ProviderEvent, None]], *, max_retries: int, retry_backoff: float,
) -> AsyncIterator[ProviderEvent]:
    """Yield one attempt's events; after a retryable ProviderError that came after HTTP 200 but before any event
    reached the caller, back off (exponential, jittered, at most MAX_BACKOFF) and try again, up to max_retries."""
    tries = 0
    while True:
        progress = Progress()
        try:
            # aclosing: if our caller stops early, the attempt's finally (closing the HTTP stream) runs now
            async with contextlib.aclosing(attempt(progress)) as events:
                async for event in events:
                    progress.yielded = True
                    yield event
            return
        except ProviderError as err:
            # Failures before HTTP 200 were already retried by the SDK. After 200 but before any event
            # reached the caller a fresh attempt is invisible to it; after that it would duplicate text.
            if progress.yielded or not progress.opened or not err.retryable or tries >= max_retries:
                raise
        tries += 1
        delay = min(retry_backoff * 2 ** (tries - 1), MAX_BACKOFF)
        await asyncio.sleep(delay * (1 - 0.25 * random.random()))


class StallGuard:
    """Iterates a streamed response, raising a retryable ProviderError("timeout") when no item arrives within
    `timeout` seconds (a plain iterator, not a generator, so it needs no closing of its own)."""

    def __init__(self, events: AsyncIterator[Any], *, timeout: float, label: str) -> None:
        self.events = events
        self.timeout = timeout
        self.label = label  # the provider's name in the message, e.g. "OpenAI"

    def __aiter__(self) -> StallGuard:
        return self

    async def __anext__(self) -> Any:
        try:
            async with asyncio.timeout(self.timeout):
                return await anext(self.events)
        except TimeoutError:
            raise ProviderError(
                "timeout", f"{self.label}: no data from the model for {self.timeout:g} s", retryable=True,
            ) from None


# ---- providers on an official async SDK (Anthropic, OpenAI) ----------------------------------------------------

RETRYABLE_CODES = frozenset({"rate_limited", "overloaded", "timeout", "provider_unavailable"})
ERROR_DESCRIPTIONS = {
    "rate_limited": "rate limit reached",
    "overloaded": "the model is overloaded",
    "timeout": "the model did not answer in time",
    "provider_unavailable": "the model server is unavailable",
    "bad_request": "the model server rejected the request",
    "auth_error": "the model server refused the credentials",
    "provider_error": "the model call failed",
}


class StreamAccumulator(Protocol):
    """Turns one SDK stream's items into provider events."""

    @property
    def complete(self) -> bool:
        """The response's last item arrived: stop reading."""

    def feed(self, item: Any) -> list[ProviderEvent]:
        """The provider events one raw item makes (often none)."""

    def end(self) -> list[ProviderEvent]:
        """The closing events, MessageEnd last; raises a retryable ProviderError when the stream ended early."""


def parse_tool_input(raw: str) -> tuple[dict[str, Any], str | None]:
    """The tool input as a dict, or ({}, reason) when the model's JSON is malformed or not an object."""
    if not raw.strip():
        return {}, None  # a tool without parameters streams no input at all
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return {}, f"expected a JSON object, got {type(value).__name__}"
    return value, None


class SdkProvider(Provider):
    """A model server behind an official async SDK: one client per event loop, retries before any output only, a
    stall timeout, the response always closed, errors mapped to codes with the key never in a message.

    A subclass names the server (`server_label`) and supplies the SDK-specific parts: `_make_client`,
    `request_kwargs`, `_open`, `_accumulator` and `_error_parts`."""

    server_label: ClassVar[str] = "Model"  # in error messages, e.g. "OpenAI: rate limit reached"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        stall_timeout: float = 30.0,
        retry_backoff: float = 0.5,
        http_client: Any = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)  # the key stays out of `options` so it is never echoed
        self._api_key = api_key or None
        self.base_url = base_url or None
        self.max_retries = max_retries
        self.timeout = timeout
        self.stall_timeout = stall_timeout
        self.retry_backoff = retry_backoff  # first wait of the provider's own retries (after HTTP 200)
        self._http_client = http_client
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def retry_options(settings: Any) -> dict[str, Any]:
        """The retry and timeout arguments every SDK provider takes from settings (CHAT_PROVIDER_*)."""
        return {"max_retries": settings.CHAT_PROVIDER_MAX_RETRIES, "timeout": settings.CHAT_PROVIDER_TIMEOUT,
                "stall_timeout": settings.CHAT_PROVIDER_STALL_TIMEOUT}

    @abstractmethod
    def _make_client(self, api_key: str | None) -> Any:
        """A new SDK client for this server (with `self._http_client`, `self.max_retries`, `self.timeout`)."""

    @abstractmethod
    def request_kwargs(self, request: ProviderRequest) -> dict[str, Any]:
        """The SDK call's arguments for one request."""

    @abstractmethod
    async def _open(self, client: Any, kwargs: dict[str, Any]) -> Any:
        """Send the request; the SDK's async stream of raw items."""

    @abstractmethod
    def _accumulator(self) -> StreamAccumulator:
        """A fresh accumulator for one attempt."""

    @abstractmethod
    def _error_parts(self, exc: BaseException) -> tuple[str, int | None, str]:
        """An SDK/transport failure as (code, HTTP status or None, detail safe to show staff)."""

    def _get_client(self) -> Any:
        """One SDK client per provider instance and event loop (an HTTP pool cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._client is None or (self._http_client is None and self._client_loop is not loop):
            api_key = self._api_key
            if api_key is None and self.base_url is not None:
                api_key = "no-key"  # local servers ignore the key but the SDKs want one
            self._client = self._make_client(api_key)
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

    async def _attempt(self, kwargs: dict[str, Any], progress: Progress) -> AsyncGenerator[ProviderEvent, None]:
        """One HTTP request and its stream, every failure mapped to ProviderError."""
        try:
            raw_stream = await self._open(self._get_client(), kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        progress.opened = True
        events = cast(AsyncGenerator[Any, None], aiter(raw_stream))
        acc = self._accumulator()
        try:
            async for item in StallGuard(events, timeout=self.stall_timeout, label=self.server_label):
                for out in acc.feed(item):
                    yield out
                if acc.complete:
                    break
            for out in acc.end():
                yield out
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
        code, status, detail = self._error_parts(exc)
        message = f"{self.server_label}: {ERROR_DESCRIPTIONS[code]}" + (f" (HTTP {status})" if status and status != 200 else "")
        if detail:
            message += f": {detail}"
        if self._api_key:
            message = message.replace(self._api_key, "[redacted]")
        return ProviderError(code, message[:500], retryable=code in RETRYABLE_CODES, status=status)
