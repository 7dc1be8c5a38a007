"""A model that answers every request with hostile markdown/HTML (select with
CHAT_PROVIDER=tests.e2e.hostile_provider.HostileProvider). The browser tests check that nothing
in it runs, loads or navigates, while it streams, once it is final and after a reload from REST."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from chat.providers.base import MessageEnd, Provider, ProviderEvent, ProviderRequest, TextDelta, Usage

REMOTE_IMAGE = "http://127.0.0.1:9/p.png"
REMOTE_IMAGE_2 = "http://127.0.0.1:9/q.png"
REMOTE_FRAME = "http://127.0.0.1:9/frame.html"

HOSTILE_TEXT = "\n".join([
    "Hostile reply starts.",
    "",
    "<script>window.__pwned=1</script>",
    "",
    '<img src=x onerror="window.__pwned=2">',
    "",
    "[click](javascript:window.__pwned=3)",
    "",
    '<a href="javascript:window.__pwned=4">raw link</a>',
    "",
    '<div onmouseover="window.__pwned=5">hover me</div>',
    "",
    f"![x]({REMOTE_IMAGE})",
    "",
    f'<img src="{REMOTE_IMAGE_2}">',
    "",
    f'<iframe src="{REMOTE_FRAME}" srcdoc="<script>parent.__pwned=6</script>"></iframe>',
    "",
    "<style>body { display: none !important; }</style>",
    "",
    '<svg onload="window.__pwned=7"><circle r="5"/></svg>',
    "",
    "[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "",
    "<details open ontoggle=\"window.__pwned=8\"><summary>s</summary></details>",
    "",
    "**bold but harmless** and `<code>` text.",
    "",
    "Hostile reply ends.",
    "SUGGESTED_VALUES: " + json.dumps([{"label": '<img src=x onerror="window.__pwned=9">', "value": "harmless value"}]),
    "SUGGESTED_ACTIONS: " + json.dumps([
        {"label": "Evil navigate", "action": "navigate", "handler": "client", "data": {"route": "javascript:window.__pwned=10"}},
        {"label": "Evil download", "action": "download", "handler": "client", "data": {"url": "javascript:window.__pwned=11"}},
    ]),
])


class HostileProvider(Provider):
    """Streams HOSTILE_TEXT in small uneven chunks, so tags are cut mid-way like a real stream."""

    name = "hostile"

    def __init__(self, delay: float = 0.005, **options: Any) -> None:
        super().__init__(**options)
        self.delay = delay

    @classmethod
    def from_settings(cls, settings: Any) -> "HostileProvider":
        return cls(delay=float(getattr(settings, "CHAT_OFFLINE_DELAY", 0.005)))

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        sizes = (3, 7, 5, 11, 2, 13)
        i = k = 0
        while i < len(HOSTILE_TEXT):
            size = sizes[k % len(sizes)]
            yield TextDelta(HOSTILE_TEXT[i:i + size])
            i, k = i + size, k + 1
            await asyncio.sleep(self.delay)
        yield MessageEnd("end_turn", Usage(input_tokens=10, output_tokens=k),
                         raw={"role": "assistant", "content": [{"type": "text", "text": HOSTILE_TEXT}]})
