"""The tool registry: an instance filled by `@registry.tool` / `register()`, like Django's AdminSite (base: chat.infra.registration)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from chat.infra.registration import Registry, caller_origin
from tools.spec import ToolSpec, spec_from_function

F = TypeVar("F", bound=Callable[..., Any])


def function_origin(fn: Callable[..., Any]) -> str:
    """`file:line` where `fn` is defined (falls back to the registration site)."""
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else caller_origin(__file__)


class ToolRegistry(Registry[ToolSpec]):
    """Tools by name; a second tool with a taken name is not registered but reported by a check (tools.E003)."""

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

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return list(self._specs)

    def global_names(self) -> list[str]:
        return [t.name for t in list(self._specs.values()) if t.is_global]

    def resolve(self, names: Iterable[str], *, disabled: Iterable[str] = ()) -> list[ToolSpec]:
        """Global tools + `names` (in order, without repeats), minus `disabled` and unknown names."""
        off = set(disabled)
        seen: dict[str, ToolSpec] = {}
        for name in [*self.global_names(), *names]:
            spec = self._specs.get(name)
            # A tool whose schema did not build is reported by the checks and never offered to the model.
            if spec is not None and not spec.problems and name not in off and name not in seen:
                seen[name] = spec
        return list(seen.values())


registry = ToolRegistry()
tool = registry.tool
