"""Payload types of the built-in tools (tools/builtin): registered on every page, like the tools themselves."""
from __future__ import annotations

from payloads.registry import registry
from payloads.spec import PayloadSpec

registry.register(PayloadSpec(
    type="web_search_results", source="tool", is_global=True,
    description="web pages found by the web_search tool (title, address, snippet) and which backend searched",
    summarize=lambda d: f"Web search for {d.get('query', '?')!r}: {len(d.get('results') or [])} results",
))
