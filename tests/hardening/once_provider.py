"""A model for the at-most-once test (CHAT_PROVIDER=tests.hardening.once_provider.OnceProvider).

"charge me" -> it calls `charge_card`, a global tool that appends a line to the file named by ONCE_COUNTER
each time it really runs (so executions are counted across processes) and then blocks, so the test can
SIGKILL the server mid-call. Anything else -> a short text answer."""
from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from typing import Any

from chat.providers.base import MessageEnd, Provider, ProviderEvent, ProviderRequest, TextDelta, ToolUseEnd, ToolUseStart, Usage
from tools.registry import registry
from tools.spec import ToolSpec


def _charge(tool_input: dict[str, Any], ctx: Any) -> str:
    with open(os.environ["ONCE_COUNTER"], "a") as f:
        f.write(f"charged {tool_input.get('amount')} in process {os.getpid()}\n")
        f.flush()
        os.fsync(f.fileno())
    time.sleep(float(os.environ.get("ONCE_TOOL_SECONDS", "120")))  # the test kills the process meanwhile
    return "charged"


if registry.get("charge_card") is None:
    registry.register(ToolSpec(
        name="charge_card", description="Charge the user's card.",
        input_schema={"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]},
        executor=_charge, is_global=True, side_effects=True,
    ))


class OnceProvider(Provider):
    name = "once"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        last = request.messages[-1]["content"] if request.messages else ""
        if isinstance(last, str) and "charge me" in last:
            yield TextDelta("Charging your card. ")
            yield ToolUseStart("toolu_charge", "charge_card")
            yield ToolUseEnd("toolu_charge", "charge_card", {"amount": 5})
            yield MessageEnd("tool_use", Usage(10, 5))
            return
        yield TextDelta("I am here; the earlier charge was interrupted and I did not repeat it.")
        yield MessageEnd("end_turn", Usage(10, 5))
