"""Where the assistant is offered, for the apps below the pages app.

Tools and payload types are registered below the pages that name them, so their admin pages cannot import the page
registry (imports run pages -> tools/payloads -> chat). The pages app hands its registry over at start-up instead
(`places_set` in its `ready()`); until then, or in a project without it, there are no places.
"""
from __future__ import annotations

from typing import Protocol


class Places(Protocol):
    """The pages the assistant is on, and where they name a tool or payload type."""

    def page_names(self) -> list[str]:
        """Every registered page's name."""
        ...

    def where_used(self, *, tool: str | None = None, payload: str | None = None) -> list[str]:
        """Where pages name this tool or payload type: "page", "page/tab" or "page/tab/subtab"."""
        ...


class _Nowhere:
    """No pages app: no pages, nothing used anywhere."""

    def page_names(self) -> list[str]:
        return []

    def where_used(self, *, tool: str | None = None, payload: str | None = None) -> list[str]:
        return []


_places: Places = _Nowhere()


def places_set(places: Places) -> None:
    """Make `places` the answer of `places_get()` (the pages app's registry, at start-up)."""
    global _places
    _places = places


def places_get() -> Places:
    """The pages app's registry once it is ready; before that, or without it, no places."""
    return _places
