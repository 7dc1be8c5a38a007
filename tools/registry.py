"""The tool registry: an instance filled by `@registry.tool` / `register()`, like Django's AdminSite."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, overload

from tools.spec import ToolSpec, spec_from_function

F = TypeVar("F", bound=Callable[..., Any])


class ToolRegistry:
    """Tools by name; duplicate names are an error."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}

    def register(self, spec: ToolSpec) -> ToolSpec:
        """Add a spec; a second spec with the same name raises ValueError."""
        if spec.name in self._tools and self._tools[spec.name] is not spec:
            raise ValueError(f"tool {spec.name!r} is already registered (from {self._tools[spec.name].module})")
        self._tools[spec.name] = spec
        return spec

    @overload
    def tool(self, fn: F) -> F: ...
    @overload
    def tool(self, fn: None = None, **options: Any) -> Callable[[F], F]: ...
    def tool(self, fn: F | None = None, **options: Any) -> F | Callable[[F], F]:
        """Decorator: register a typed function as a tool (`@registry.tool` or `@registry.tool(is_global=True)`)."""
        def decorate(f: F) -> F:
            self.register(spec_from_function(f, **options))
            return f
        return decorate(fn) if fn is not None else decorate

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def global_names(self) -> list[str]:
        return [t.name for t in self._tools.values() if t.is_global]

    def resolve(self, names: Iterable[str], *, disabled: Iterable[str] = ()) -> list[ToolSpec]:
        """Global tools + `names` (in order, without repeats), minus `disabled` and unknown names."""
        off = set(disabled)
        seen: dict[str, ToolSpec] = {}
        for name in [*self.global_names(), *names]:
            spec = self._tools.get(name)
            if spec is not None and name not in off and name not in seen:
                seen[name] = spec
        return list(seen.values())


registry = ToolRegistry()
tool = registry.tool
