"""A provider for tests: each model call plays the next enqueued script of provider events."""
from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar

from chat.providers.base import MessageEnd, Provider, ProviderError, ProviderEvent, ProviderRequest, TextDelta, ToolInputDelta, ToolUseEnd, ToolUseStart, Usage

Step = ProviderEvent | float | asyncio.Event | ProviderError  # float: sleep; Event: wait for it; error: raise
Script = list[Step] | Callable[[ProviderRequest], list[Step]]


class ScriptedProvider(Provider):
    """Plays enqueued scripts in order; records every request it was given."""

    name = "scripted"
    supports_images = True  # tests read the image/document blocks a request carried from `requests`
    supports_documents = True
    _queue: ClassVar[deque[Script]] = deque()
    requests: ClassVar[list[ProviderRequest]] = []

    @classmethod
    def enqueue(cls, *scripts: Script) -> None:
        cls._queue.extend(scripts)

    @classmethod
    def reset(cls) -> None:
        cls._queue.clear()
        cls.requests.clear()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        type(self).requests.append(request)
        if not self._queue:
            raise ProviderError("provider_error", "scripted provider: no script enqueued")
        script = self._queue.popleft()
        steps = script(request) if callable(script) else script
        ended = False
        for step in steps:
            if isinstance(step, (int, float)):
                await asyncio.sleep(step)
            elif isinstance(step, asyncio.Event):
                await step.wait()
            elif isinstance(step, ProviderError):
                raise step
            else:
                ended = ended or isinstance(step, MessageEnd)
                yield step
        if not ended:
            yield MessageEnd(stop_reason="end_turn", usage=Usage(10, 10))


def text(*chunks: str, usage: Usage | None = None) -> list[Step]:
    """A text-only response streamed in the given chunks."""
    return [*(TextDelta(c) for c in chunks), MessageEnd("end_turn", usage or Usage(10, len(chunks)))]


def tool_call(name: str, tool_input: dict[str, Any], *, tool_id: str = "toolu_1", before: str = "") -> list[Step]:
    """A response that says `before` and then calls one tool, its input streamed in fragments."""
    raw = json.dumps(tool_input)
    steps: list[Step] = [TextDelta(before)] if before else []
    steps += [ToolUseStart(tool_id, name), *(ToolInputDelta(tool_id, raw[i:i + 7]) for i in range(0, len(raw), 7))]
    steps += [ToolUseEnd(tool_id, name, tool_input), MessageEnd("tool_use", Usage(10, 5))]
    return steps
