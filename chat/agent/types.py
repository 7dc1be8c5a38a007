"""Types the agent loop speaks: tools it can call and the events it yields. No Django here."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chat.providers.base import ToolCallRecord, Usage


@dataclass(slots=True)
class ToolProgress:
    """Yielded by a streaming tool executor while it works."""

    stage: str
    message: str = ""
    progress: float | None = None
    data: Any = None


@dataclass(slots=True)
class ToolResult:
    """What a tool returns: `text` goes to the model, `payload` ({type, data}) to the client, `changes` (the records it
    changed: `{entity, id, kind: created|updated|deleted, fields?}`) to the page beside the chat."""

    text: str
    payload: dict[str, Any] | None = None
    is_error: bool = False
    changes: list[dict[str, Any]] = field(default_factory=list)
    # the sources it found, numbered for citing (tools.sources: {n, id, title, url, snippet, source}): the turn's
    # `complete.payload.sources`
    sources: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is asking and from where; tools act with this user's permissions only."""

    user: Any = None  # the host's user object, opaque here: the agent loop knows no Django
    conversation_id: int | None = None
    run_id: str = ""
    context: dict[str, Any] = field(default_factory=dict)
    services: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)  # the page's shared state: a tool changes it in place (the page is told)
    tool_use_id: str = ""  # the call being run (the loop gives each call its own copy of the context)


@dataclass(frozen=True, slots=True)
class AgentTool:
    """A tool as the loop sees it. `executor(input, ctx)` may be sync, async, or a (async) generator."""

    name: str
    description: str
    input_schema: dict[str, Any]
    executor: Callable[..., Any]
    requires_approval: bool = False
    client_side: bool = False  # a tool the client runs (AG-UI frontend tools): the loop stops at its call
    in_tab: bool = False  # a tool the sending tab runs while the loop waits (its executor asks the tab)


    def definition(self) -> dict[str, Any]:
        """The provider-facing definition (Anthropic tool format)."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


# ---- events -------------------------------------------------------------------------------------


@dataclass(slots=True)
class AgentTextDelta:
    text: str
    is_tool_marker: bool = False  # inserted by the loop, not written by the model


@dataclass(slots=True)
class AgentToolStart(ToolCallRecord):
    """The model made this call; the loop is about to answer it (run it, ask for approval, or hand it to the client)."""


@dataclass(slots=True)
class AgentToolProgress:
    tool_use_id: str
    name: str
    update: ToolProgress


@dataclass(slots=True)
class AgentToolApproval(ToolCallRecord):
    """The call waits for the user's approval before it runs."""


@dataclass(slots=True)
class AgentToolComplete(ToolCallRecord):
    """The call is answered: `index` is its place among the turn's calls (its `[[tool:N]]` marker)."""

    index: int
    result: ToolResult
    duration_ms: float


@dataclass(slots=True)
class AgentIteration:
    """One model call finished: raw output and usage, for diagnostics."""

    iteration: int
    stop_reason: str
    usage: Usage
    raw: dict[str, Any]


@dataclass(slots=True)
class AgentComplete:
    text: str
    stop_reason: str


AgentEvent = (
    AgentTextDelta
    | AgentToolStart
    | AgentToolProgress
    | AgentToolApproval
    | AgentToolComplete
    | AgentIteration
    | AgentComplete
)


class TextChunks(list[str]):
    """A list of text pieces that joins every COMPACT_AT pieces into one: a token is a few bytes but a str object
    costs ~50 more, so a long answer kept token by token would take ~10x its size."""

    COMPACT_AT = 64

    def __init__(self, *pieces: str) -> None:
        super().__init__(pieces)
        self._joined = 0  # pieces before this index are already compacted chunks

    def append(self, piece: str) -> None:
        super().append(piece)
        if len(self) - self._joined >= self.COMPACT_AT:
            self[self._joined:] = ["".join(self[self._joined:])]
            self._joined = len(self)
            if self._joined >= self.COMPACT_AT:  # and the chunks themselves, rarely (amortised O(n))
                self[:] = ["".join(self)]
                self._joined = 1


@dataclass
class LoopState:
    """What the loop has produced so far; the caller reads it even when the loop is cancelled."""

    messages: list[dict[str, Any]] = field(default_factory=list)  # provider messages added this turn
    text_parts: list[str] = field(default_factory=TextChunks)  # the text of finished model calls and tool markers
    streaming: list[str] | None = None  # the model call in progress' text so far (each token is kept once, here)
    tool_history: list[dict[str, Any]] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    iterations: int = 0
    pending_tool_uses: list[dict[str, Any]] = field(default_factory=list)  # emitted, not yet answered
    client_calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, input}: calls the client answers

    @property
    def text(self) -> str:
        """All the text so far, the model call in progress included."""
        return "".join(self.text_parts) + ("".join(self.streaming) if self.streaming else "")
