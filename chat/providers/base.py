"""The provider contract: one async streaming model call yielding typed provider events."""
from __future__ import annotations

import asyncio
import contextlib
import random
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar


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
class TextDelta:
    text: str


@dataclass(slots=True)
class ToolUseStart:
    id: str
    name: str


@dataclass(slots=True)
class ToolInputDelta:
    id: str
    partial_json: str


@dataclass(slots=True)
class ToolUseEnd:
    """A finished tool_use block; `input_error` is set when the model's JSON did not parse."""

    id: str
    name: str
    input: dict[str, Any]
    input_error: str | None = None


@dataclass(slots=True)
class MessageEnd:
    stop_reason: str
    usage: Usage
    raw: dict[str, Any] = field(default_factory=dict)  # the model's output as the API gave it


ProviderEvent = TextDelta | ToolUseStart | ToolInputDelta | ToolUseEnd | MessageEnd


@dataclass(slots=True)
class ProviderRequest:
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    model: str
    max_tokens: int
    temperature: float | None = None
    tool_choice: str = "auto"  # "auto" | "none"


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
