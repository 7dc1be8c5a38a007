"""A benchmark model: streams N plain-text tokens instantly or at a set rate, and calls no tools.

Defaults come from the environment (BENCH_TOKENS, BENCH_TOKEN_RATE; rate 0 = instant); a user message
containing `bench:tokens=<n>,rate=<tokens per second>` overrides them for that turn, so one server
process can serve every scenario. Select it with CHAT_PROVIDER=tests.bench.provider.BenchProvider.
"""
from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from chat.providers.base import MessageEnd, Provider, ProviderEvent, ProviderRequest, TextDelta, Usage
from tests.bench.words import answer_text, token_text

DIRECTIVE = re.compile(r"bench:tokens=(\d+)(?:,rate=([0-9.]+))?")

class BenchProvider(Provider):
    """Deterministic text at `rate` tokens/s (0: instant, yielding to the loop between tokens)."""

    name = "bench"
    is_offline = True

    def __init__(self, tokens: int = 100, rate: float = 0.0, **options: Any) -> None:
        super().__init__(**options)
        self.tokens = tokens
        self.rate = rate

    @classmethod
    def from_settings(cls, settings: Any) -> BenchProvider:
        return cls(tokens=int(os.environ.get("BENCH_TOKENS", "100")), rate=float(os.environ.get("BENCH_TOKEN_RATE", "0")))

    def _params(self, request: ProviderRequest) -> tuple[int, float]:
        for msg in reversed(request.messages):
            if msg.get("role") != "user":
                continue
            content = msg.get("content")
            text = content if isinstance(content, str) else " ".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
            m = DIRECTIVE.search(text)
            if m:
                return int(m.group(1)), float(m.group(2) or self.rate)
            break
        return self.tokens, self.rate

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        n, rate = self._params(request)
        start = time.perf_counter()
        for i in range(n):
            if rate > 0 and i:
                # absolute schedule: token i is due at start + i/rate, so the rate does not drift
                delay = start + i / rate - time.perf_counter()
                await asyncio.sleep(delay if delay > 0 else 0)
            else:
                await asyncio.sleep(0)  # a real stream yields to the loop between network reads
            yield TextDelta(token_text(i))
        yield MessageEnd("end_turn", Usage(input_tokens=len(request.system) // 4, output_tokens=n),
                         raw={"role": "assistant", "content": [{"type": "text", "text": answer_text(n)}]})
