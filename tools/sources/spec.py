"""Source: one searchable model - its fields, how each object is shown and cited, and who may see which objects."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from django.db import models
from django.utils.functional import Promise

WEIGHTS = ("A", "B", "C", "D")  # as PostgreSQL's setweight: A counts most (a title), D least
Scope = Callable[[Any, dict[str, Any]], "models.QuerySet[Any]"]  # (user, request context) -> the objects this user may see
Shown = Callable[[Any], str] | str  # a function of the object, or the name of one of its attributes


@dataclass(frozen=True)
class Source:
    """A searchable model. `scope(user, context)` is mandatory: the search runs only over the objects it returns."""

    name: str
    model: type[models.Model]
    # field -> weight ("A".."D"); a sequence: the first field weighs A, the others B
    fields: Mapping[str, str] | Sequence[str]
    scope: Scope | None
    title: Shown = ""  # what a citation is called; "" uses str(obj)
    snippet: Shown = ""  # the text under it; "" uses the start of the last searched field
    url: Callable[[Any], str] | None = None  # the object's page; None uses obj.get_absolute_url()
    label: str | Promise = ""  # what people read for the source ("Articles"); "" derives it from the name
    description: str = ""  # what the model reads about the search tool; "" says "Search <label>"
    permissions: Sequence[str] = ()  # Django permission strings, all required to be offered the tool
    tool_name: str = ""  # "" is "search_<name>"
    backend: str = ""  # dotted path of a SearchBackend class; "" is the database's default (backends.default_path)
    offer_tool: bool = True  # False: no search tool of its own (a host's tool searches it with source_search and cites)
    limit: int = 8  # results the tool returns by default (the model may ask for up to MAX_LIMIT)
    stopwords: frozenset[str] = field(default_factory=frozenset)  # words of this domain that carry no topic

    def __post_init__(self) -> None:
        object.__setattr__(self, "permissions", tuple(self.permissions))
        if not isinstance(self.fields, Mapping):
            names = list(self.fields)
            object.__setattr__(self, "fields", {n: ("A" if i == 0 else "B") for i, n in enumerate(names)})

    @property
    def field_weights(self) -> dict[str, str]:
        """Each searched field and its weight ("A".."D"): `fields` as __post_init__ made it, a mapping."""
        return dict(cast(Mapping[str, str], self.fields))

    @property
    def search_tool_name(self) -> str:
        return self.tool_name or f"search_{self.name}"

    def display_label(self) -> str:
        """The source's label in the active language."""
        return str(self.label or "").strip() or self.name.replace("_", " ").capitalize()

    def columns(self, obj: Any) -> tuple[str, str, str, str]:
        """The object's searchable text by weight (A, B, C, D): each weight's fields joined; list values joined by spaces."""
        parts: dict[str, list[str]] = {w: [] for w in WEIGHTS}
        for name, weight in self.field_weights.items():
            parts[weight].append(_text(getattr(obj, name, "")))
        return tuple(" ".join(p for p in parts[w] if p) for w in WEIGHTS)  # type: ignore[return-value]

    def title_of(self, obj: Any) -> str:
        return _shown(self.title, obj) or str(obj)

    def snippet_of(self, obj: Any, limit: int = 240) -> str:
        text = _shown(self.snippet, obj) if self.snippet else _text(getattr(obj, list(self.field_weights)[-1], ""))
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

    def url_of(self, obj: Any) -> str:
        if self.url is not None:
            return str(self.url(obj))
        get = getattr(obj, "get_absolute_url", None)
        return str(get()) if callable(get) else ""


def _shown(how: Shown, obj: Any) -> str:
    value = how(obj) if callable(how) else getattr(obj, how, "") if how else ""
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return " ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return " ".join(_text(v) for v in value.values())
    return str(value)
