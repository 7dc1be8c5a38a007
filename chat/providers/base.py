"""The provider contract: one async streaming model call yielding typed provider events."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        """Accumulate another call's usage into this one."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


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

    def __init__(self, **options: Any) -> None:
        self.options = options

    @classmethod
    def from_settings(cls, settings: Any) -> Provider:
        """Build the provider from the engine's settings (`chat.conf.chat_settings`: every CHAT_* with its default,
        any other name read from Django's settings); subclasses read what they need."""
        return cls()

    @abstractmethod
    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one model response; must end with exactly one MessageEnd or raise ProviderError."""
