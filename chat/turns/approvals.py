"""What a person reads to judge a tool call pending approval: the tool's own sentence and the input as labelled fields."""
from __future__ import annotations

from typing import Any

from chat.agent.types import ToolContext
from tools.registry import registry as tool_registry
from tools.spec import approval_fields


def approval_words(name: str, tool_input: dict[str, Any], ctx: ToolContext | None) -> tuple[str | None, list[dict[str, str]]]:
    """(sentence or None, fields) for a call of the tool `name`; blocking (a tool's `describe` reads the database as
    `ctx.user`, so it runs where tool code runs). A tool not in the registry (a client's) gets its input's fields."""
    spec = tool_registry.get(name)
    if spec is None:
        return None, approval_fields({}, tool_input)
    return spec.approval_words(tool_input, ctx or ToolContext())
