"""The tool registry: an instance filled by `@registry.tool` / `register()`, like Django's AdminSite."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, overload

from chat.registration import Duplicate, caller_origin
from tools.spec import ToolSpec, spec_from_function

F = TypeVar("F", bound=Callable[..., Any])


def function_origin(fn: Callable[..., Any]) -> str:
    """`file:line` where `fn` is defined (falls back to the registration site)."""
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else caller_origin(__file__)


class ToolRegistry:
    """Tools by name; a second tool with a taken name is not registered but reported by `check` (tools.E003)."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._origins: dict[str, str] = {}
        self.duplicates: list[Duplicate] = []

    def register(self, spec: ToolSpec, *, origin: str | None = None) -> ToolSpec:
        """Add a spec; a different spec under a taken name from elsewhere is recorded in `duplicates`, not added."""
        origin = origin or caller_origin(__file__)
        known = self._tools.get(spec.name)
        if known is not None and known is not spec and self._origins.get(spec.name) != origin:
            self.duplicates.append(Duplicate(spec.name, self._origins[spec.name], origin))
            return spec
        self._tools[spec.name] = spec
        self._origins[spec.name] = origin
        return spec

    @overload
    def tool(self, fn: F) -> F: ...
    @overload
    def tool(self, fn: None = None, **options: Any) -> Callable[[F], F]: ...
    def tool(self, fn: F | None = None, **options: Any) -> F | Callable[[F], F]:
        """Decorator: register a typed function as a tool (`@registry.tool` or `@registry.tool(is_global=True)`)."""
        def decorate(f: F) -> F:
            self.register(spec_from_function(f, **options), origin=function_origin(f))
            return f
        return decorate(fn) if fn is not None else decorate

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)
        self._origins.pop(name, None)

    def origin(self, name: str) -> str:
        """Where the tool called `name` was registered (`file:line`), or ""."""
        return self._origins.get(name, "")

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolSpec]:
        # a snapshot: MCP servers' tools are (un)registered while other threads read (tools/mcp.py)
        return iter(list(self._tools.values()))

    def names(self) -> list[str]:
        return list(self._tools)

    def global_names(self) -> list[str]:
        return [t.name for t in list(self._tools.values()) if t.is_global]

    def resolve(self, names: Iterable[str], *, disabled: Iterable[str] = ()) -> list[ToolSpec]:
        """Global tools + `names` (in order, without repeats), minus `disabled` and unknown names."""
        off = set(disabled)
        seen: dict[str, ToolSpec] = {}
        for name in [*self.global_names(), *names]:
            spec = self._tools.get(name)
            # A tool whose schema did not build is reported by the checks and never offered to the model.
            if spec is not None and not spec.problems and name not in off and name not in seen:
                seen[name] = spec
        return list(seen.values())


registry = ToolRegistry()
tool = registry.tool
