"""The source registry: `register_source(Source(...))` in an app's `assistant.py` adds the source, its search tool and
the signal handlers that keep its index current."""
from __future__ import annotations

from collections.abc import Iterator

from chat.infra.registration import Duplicate, caller_origin
from tools.registry import ToolRegistry, registry as tool_registry
from tools.sources.spec import Source


class SourceRegistry:
    """Sources by name; a second source under a taken name is not registered but reported by `check` (tools.E023)."""

    def __init__(self) -> None:
        self._sources: dict[str, Source] = {}
        self._origins: dict[str, str] = {}
        self.duplicates: list[Duplicate] = []

    def register(self, source: Source, *, tools: ToolRegistry | None = None, origin: str | None = None) -> Source:
        """Add the source and its search tool (to `tools`, the global tool registry unless given); connect its index."""
        from tools.sources import index
        from tools.sources.tool import source_tool_spec

        origin = origin or caller_origin(__file__)
        known = self._sources.get(source.name)
        if known is not None and known is not source and self._origins.get(source.name) != origin:
            self.duplicates.append(Duplicate(source.name, self._origins[source.name], origin))
            return source
        self._sources[source.name] = source
        self._origins[source.name] = origin
        if source.offer_tool:
            (tools if tools is not None else tool_registry).register(source_tool_spec(source), origin=origin)
        index.signals_connect(source)
        return source

    def unregister(self, name: str, *, tools: ToolRegistry | None = None) -> None:
        from tools.sources import index

        source = self._sources.pop(name, None)
        self._origins.pop(name, None)
        if source is not None and source.offer_tool:
            (tools if tools is not None else tool_registry).unregister(source.search_tool_name)
        if source is not None:
            index.signals_disconnect(source)

    def origin(self, name: str) -> str:
        return self._origins.get(name, "")

    def get(self, name: str) -> Source | None:
        return self._sources.get(name)

    def by_tool(self, tool_name: str) -> Source | None:
        return next((s for s in self._sources.values() if s.search_tool_name == tool_name), None)

    def __iter__(self) -> Iterator[Source]:
        return iter(list(self._sources.values()))


registry = SourceRegistry()


def register_source(source: Source) -> Source:
    """Register a source (in an app's `assistant.py`); its search tool is named `source.search_tool_name`."""
    return registry.register(source, origin=caller_origin(__file__))
