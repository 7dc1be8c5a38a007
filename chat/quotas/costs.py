"""What a model call costs: prices per model (CHAT_PRICES, US dollars per million tokens) applied to its usage.

`cost_of(model, usage)` is the one function to call for a cost (diagnostics, the admin, budgets and metrics
all use it); it returns None when the model has no price, so "unknown" is never shown as "free".
"""
from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chat.conf import DEFAULT_PRICES, chat_settings
from chat.providers.base import Usage

PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
__all__ = ["DEFAULT_PRICES", "PRICE_FIELDS", "Price", "cost_of", "price_for", "prices_problems", "total_tokens"]


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens of each kind; cache prices default to the input price."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> Price:
        base = float(raw["input"])
        return cls(input=base, output=float(raw["output"]), cache_read=float(raw.get("cache_read", base)),
                   cache_write=float(raw.get("cache_write", base)))


def price_for(model: str) -> Price | None:
    """The price of `model`: an exact name first, then the first matching pattern; None when none matches."""
    prices: Mapping[str, Mapping[str, Any]] = chat_settings.CHAT_PRICES
    raw = prices.get(model)
    if raw is None:
        raw = next((p for pattern, p in prices.items() if fnmatch.fnmatchcase(model, pattern)), None)
    return Price.from_mapping(raw) if raw is not None else None


def cost_of(model: str, usage: Usage | Mapping[str, int]) -> float | None:
    """The cost in USD of `usage` tokens on `model` (a Usage or its `as_dict()`), or None if the model has no price."""
    price = price_for(model)
    if price is None:
        return None
    u = usage if isinstance(usage, Usage) else Usage(
        int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)),
        int(usage.get("cache_read_tokens", 0)), int(usage.get("cache_write_tokens", 0)))
    total = (u.input_tokens * price.input + u.output_tokens * price.output
             + u.cache_read_tokens * price.cache_read + u.cache_write_tokens * price.cache_write) / 1_000_000
    return round(total, 8)


def total_tokens(usage: Mapping[str, int]) -> int:
    """Every token a call consumed, cache reads and writes included (what token budgets count)."""
    return sum(int(usage.get(k, 0)) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))


def prices_problems(prices: Any) -> list[str]:
    """What is wrong with a CHAT_PRICES value (for `manage.py check`)."""
    if not isinstance(prices, Mapping):
        return [f"CHAT_PRICES must be a dict of model (or pattern) -> prices, not {type(prices).__name__}."]
    problems = []
    for model, raw in prices.items():
        if not isinstance(raw, Mapping) or "input" not in raw or "output" not in raw:
            problems.append(f"CHAT_PRICES[{model!r}] needs at least `input` and `output` (USD per million tokens).")
            continue
        unknown = set(raw) - set(PRICE_FIELDS)
        if unknown:
            problems.append(f"CHAT_PRICES[{model!r}] has unknown fields {sorted(unknown)}; known: {', '.join(PRICE_FIELDS)}.")
        for name in PRICE_FIELDS:
            value = raw.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                problems.append(f"CHAT_PRICES[{model!r}][{name!r}] must be a number >= 0, not {value!r}.")
    return problems
