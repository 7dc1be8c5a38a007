"""The live server's model for the standard-client tests: the offline model, except that a message containing
FAIL_OVERLOADED gets the provider failure `overloaded` (select with CHAT_PROVIDER=tests.interop.provider.FailingOfflineProvider).

Selecting it also registers one test-only global tool, `remember_color`, that changes the page's shared state (the
official clients' state tests: a message "remember color blue" makes the offline model call it). It is never part of
the product: only a server that runs with this provider has it."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from chat.agent.types import ToolContext
from chat.providers.base import ProviderError, ProviderEvent, ProviderRequest
from chat.providers.offline import OfflineProvider
from tools.registry import registry as tool_registry
from tools.spec import ToolSpec

TRIGGER = "FAIL_OVERLOADED"


def remember_color(tool_input: dict[str, Any], ctx: ToolContext) -> str:
    """Changes the shared state in place: a top-level value, one inside a nested object, an item appended to a list."""
    color = str(tool_input.get("color") or "").strip() or "none"
    ctx.state["color"] = color
    prefs = ctx.state.setdefault("prefs", {})
    if isinstance(prefs, dict):
        prefs["color"] = color
        history = prefs.setdefault("history", [])
        if isinstance(history, list):
            history.append(color)
    return f"Remembered the color {color}."


REMEMBER_COLOR = ToolSpec(
    name="remember_color", description="Store the named color in the shared state.",
    input_schema={"type": "object", "properties": {"color": {"type": "string", "description": "The color."}}, "required": ["color"]},
    executor=remember_color, is_global=True,
)


class FailingOfflineProvider(OfflineProvider):
    """OfflineProvider, with one scripted failure for tests (and the test tool `remember_color` registered)."""

    name = "offline-failing"

    @classmethod
    def from_settings(cls, settings: Any) -> OfflineProvider:
        tool_registry.register(REMEMBER_COLOR)  # the same spec each time: registered once
        return super().from_settings(settings)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        last = request.messages[-1] if request.messages else {}
        if last.get("role") == "user" and isinstance(last.get("content"), str) and TRIGGER in last["content"]:
            raise ProviderError("overloaded", "The model is overloaded (test).")
        async for event in super().stream(request):
            yield event
