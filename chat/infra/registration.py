"""What the registries of pages, tools and payload types share: the `Registry` base (specs by name, where each was
registered, a second registration under a taken name kept out and recorded for a system check), the check message
for such a duplicate, the mirror of a registry into ORM rows, and the title people read in place of a registered name."""
from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.core import checks
from django.utils.translation import gettext


@dataclass(frozen=True)
class Duplicate:
    """A registration that was not added, from `second`; the one from `first` stays registered.

    `kind` says what was taken: the registry's key ("name", or "type" for payload types), or what a registry adds
    ("marker"; "reserved" for a name nobody may take, where `first` is "")."""

    name: str
    first: str
    second: str
    kind: str = "name"


def caller_origin(*registry_files: str) -> str:
    """`file:line` of the first caller outside `registry_files` (registry modules' `__file__`): the registration site."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename in (*registry_files, __file__):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class Registry[S]:
    """Specs by key, in registration order (an instance, like Django's AdminSite; tests build their own).

    A different spec under a taken key from another registration site is not added but recorded in `duplicates`
    (a system check reports it, and the first stays); the same site registering again (a module reloaded) replaces."""

    key_field = "name"  # the spec attribute that names it

    def __init__(self) -> None:
        self._specs: dict[str, S] = {}
        self._origins: dict[str, str] = {}
        self.duplicates: list[Duplicate] = []

    def key(self, spec: S) -> str:
        """The name `spec` is registered under."""
        return str(getattr(spec, self.key_field))

    def register(self, spec: S, *, origin: str | None = None) -> S:
        """Add `spec` (see the class docstring for a taken key); returns it, so it works as a decorator's body."""
        origin = origin or caller_origin(*self._registry_files())
        name = self.key(spec)
        known = self._specs.get(name)
        if known is spec:
            return spec
        if known is not None:
            if self._origins.get(name) != origin:
                self.duplicates.append(Duplicate(name, self._origins[name], origin, self.key_field))
                return spec
            self.unregister(name)
        if self._admit(spec, origin):
            self._specs[name] = spec
            self._origins[name] = origin
        return spec

    def _admit(self, spec: S, origin: str) -> bool:
        """Whether `spec` (its key free) may be added; a subclass records in `duplicates` why not."""
        return True

    def _registry_files(self) -> tuple[str, ...]:
        """The modules whose frames are the registry's own, not a registration site: those of its classes."""
        return tuple(inspect.getfile(c) for c in type(self).__mro__ if c.__module__ not in ("builtins", "typing"))

    def unregister(self, name: str) -> None:
        """Remove `name` (tests, reloads, an MCP server's tools); nothing happens when it is not registered."""
        self._specs.pop(name, None)
        self._origins.pop(name, None)

    def origin(self, name: str) -> str:
        """Where the spec called `name` was registered (`file:line`), or ""."""
        return self._origins.get(name, "")

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[S]:
        # a snapshot: MCP servers' tools are (un)registered while other threads read (tools/mcp.py)
        return iter(list(self._specs.values()))

    def __len__(self) -> int:
        return len(self._specs)


DISCOVERY_MODULE = "assistant"  # one module per app registers its tools, payload types, pages (docs/extending.md)
REGISTRY_APPS = ("tools", "payloads", "pages")
_built_in: set[str] = set()


def discover(app_name: str) -> None:
    """Each registry app calls this from its `ready()` once its built-ins are registered; when every installed one
    has, every app's `assistant` module is imported (so a host's registrations come after all built-ins, whatever
    the order of INSTALLED_APPS). Importing them again is a no-op."""
    from django.apps import apps
    from django.utils.module_loading import autodiscover_modules

    _built_in.add(app_name)
    if all(name in _built_in for name in REGISTRY_APPS if apps.is_installed(name)):
        autodiscover_modules(DISCOVERY_MODULE)


def duplicate_errors(registry: Registry[Any], what: str, *, hint: str, id: str) -> list[checks.CheckMessage]:
    """One system-check error per name registered twice, worded alike by every registry (`what`: "tool", "page", ...)."""
    return [checks.Error(f"{what} {dup.name!r} is registered twice: in {dup.first} and in {dup.second} (the second is ignored)",
                         hint=hint, id=id)
            for dup in registry.duplicates if dup.kind == registry.key_field]


def rows_mirror(rows: Any, key: str, mirrored: Iterable[tuple[str, dict[str, Any]]], *,
                created: dict[str, dict[str, Any]] | None = None) -> None:
    """Mirror a registry into ORM rows: one row per (name, fields) of `mirrored`, its fields refreshed and `registered`
    set; rows of `rows` (a queryset; those another source mirrors left out) whose name is not given are marked
    unregistered. `created[name]` are fields only a new row takes (staff tune them afterwards)."""
    names: list[str] = []
    for name, fields in mirrored:
        names.append(name)
        wanted = {**fields, "registered": True}
        row, made = rows.model.objects.get_or_create(**{key: name}, defaults={**(created or {}).get(name, {}), **wanted})
        changed = [field for field, value in wanted.items() if getattr(row, field) != value]
        if not made and changed:
            for field in changed:
                setattr(row, field, wanted[field])
            row.save(update_fields=[*changed, "updated_at"])
    rows.exclude(**{f"{key}__in": names}).filter(registered=True).update(registered=False)


_WORD_BREAK = re.compile(r"[^0-9A-Za-z]+|(?<=[a-z0-9])(?=[A-Z])")


def title_from_name(name: str) -> str:
    """A name as people read it: "search_articles" -> "Search articles", "getWeather" -> "Get weather" (words in capitals
    stay so: "fetch_URL" -> "Fetch URL"); "" for a name without letters or digits."""
    parts = [p for p in _WORD_BREAK.split(name) if p]
    text = " ".join(p if p.isupper() and len(p) > 1 else p.lower() for p in parts)
    return text[:1].upper() + text[1:]


def title_shown(title: object, name: str) -> str:
    """The title to show in the active language: the registration's own (a lazy translation is translated now), else
    the name's derived one, through gettext so a project's catalog may translate it too."""
    text = str(title or "").strip()
    if text:
        return text
    derived = title_from_name(name)
    return gettext(derived) if derived else ""  # gettext("") is the catalog's header
