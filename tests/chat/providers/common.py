"""Helpers shared by the OpenAI and Anthropic provider tests: a request, a tool, collecting a stream."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chat.providers.base import Provider, ProviderError, ProviderEvent, ProviderRequest, TextDelta

MODEL = "model-test"  # the fakes echo the requested model back in their responses
WEATHER_TOOL = {
    "name": "get_weather", "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def make_request(**overrides: Any) -> ProviderRequest:
    """A one-message request; any field can be overridden."""
    fields: dict[str, Any] = {
        "system": "You are terse.", "messages": [{"role": "user", "content": "Hi"}], "tools": [],
        "model": MODEL, "max_tokens": 256,
    }
    return ProviderRequest(**{**fields, **overrides})


async def collect(provider: Provider, request: ProviderRequest | None = None) -> list[ProviderEvent]:
    """Every event of one stream (which must end without an error)."""
    return [event async for event in provider.stream(request or make_request())]


async def collect_until_error(provider: Provider) -> tuple[list[ProviderEvent], ProviderError]:
    """Events yielded before the ProviderError that must end the stream, and that error."""
    events: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as caught:
        async for event in provider.stream(make_request()):
            events.append(event)
    return events, caught.value


async def cancel_after_first_text(provider: Provider) -> None:
    """Stream in a task, cancel it once the first text arrived, and check the cancellation reached the caller."""
    got_first = asyncio.Event()

    async def consume() -> None:
        async for event in provider.stream(make_request()):
            if isinstance(event, TextDelta):
                got_first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def texts(events: list[ProviderEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]
