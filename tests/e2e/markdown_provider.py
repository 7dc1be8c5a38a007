"""A model that answers with long, rich markdown (headings, a table, a code block, many paragraphs), streamed
slowly in small chunks (select with CHAT_PROVIDER=tests.e2e.markdown_provider.MarkdownProvider). The browser
tests use it for incremental rendering, copy buttons and scrolling while the reader reads older text."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from chat.providers.base import MessageEnd, Provider, ProviderEvent, ProviderRequest, TextDelta, Usage

CODE = 'def greet(name):\n    return f"Hello, {name}!"'
PARAGRAPHS = "\n\n".join(f"Paragraph {i}: streams collect **new articles** on a topic every week." for i in range(1, 31))
MARKDOWN_TEXT = "\n".join([
    "## Streams at a glance",
    "",
    "| Stream | Reports |",
    "|---|---|",
    "| Oncology | weekly |",
    "| Cardiology | monthly |",
    "",
    "```python",
    CODE,
    "```",
    "",
    PARAGRAPHS,
    "",
    "The end of the answer.",
])


class MarkdownProvider(Provider):
    """Streams MARKDOWN_TEXT in chunks of 9 characters, `delay` seconds apart."""

    name = "markdown"

    def __init__(self, delay: float = 0.01, **options: Any) -> None:
        super().__init__(**options)
        self.delay = delay

    @classmethod
    def from_settings(cls, settings: Any) -> "MarkdownProvider":
        return cls(delay=float(getattr(settings, "CHAT_OFFLINE_DELAY", 0.01)))

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        k = 0
        for i in range(0, len(MARKDOWN_TEXT), 9):
            yield TextDelta(MARKDOWN_TEXT[i:i + 9])
            k += 1
            await asyncio.sleep(self.delay)
        yield MessageEnd("end_turn", Usage(input_tokens=10, output_tokens=k),
                         raw={"role": "assistant", "content": [{"type": "text", "text": MARKDOWN_TEXT}]})
