"""What a standard client (AG-UI, the AI SDK) adds to a turn: its thread name, its own tools, its tool answers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chat.providers.base import ToolCallRecord


@dataclass(frozen=True)
class ClientTool:
    """A tool the client runs itself, offered to the model. An AG-UI or AI SDK client's call ends the run (the client
    answers in its next request); the tray's (`in_tab`, from `chat.send.client_tools`) runs in the sending tab while the
    run waits for its answer."""

    name: str
    description: str
    parameters: dict[str, Any]
    title: str | None = None
    requires_approval: bool = False
    in_tab: bool = False


@dataclass(frozen=True)
class ClientToolResult:
    """The client's answer to one of the calls that ended the previous run of the conversation."""

    tool_use_id: str
    content: str


@dataclass(frozen=True)
class TurnExtras:
    """Per-request additions; the default adds nothing (the tray's and programs' v1 turns)."""

    thread_id: str | None = None
    client_tools: tuple[ClientTool, ...] = ()
    tool_results: tuple[ClientToolResult, ...] = ()


@dataclass
class AnsweredCall(ToolCallRecord):
    """A client tool call with its answer, as the continuing run stores it (a ToolCall row, tool_history)."""

    output: str = ""


NO_EXTRAS = TurnExtras()
