"""The page registry: pages by name (the specs, what each page tells the agent, live in pages.spec)."""
from __future__ import annotations

import logging

from chat.infra.registration import Registry
from pages.spec import BUILTIN_CLIENT_ACTIONS, DEFAULT_PAGE, ActionFailed, ClientAction, ContextBuilder, PageSpec, ServerAction, ServerActionResult, TabSpec

__all__ = ["BUILTIN_CLIENT_ACTIONS", "DEFAULT_PAGE", "ActionFailed", "ClientAction", "ContextBuilder", "PageRegistry",
           "PageSpec", "ServerAction", "ServerActionResult", "TabSpec", "register_page", "registry"]

logger = logging.getLogger(__name__)
# Unknown page names come from browsers: remember a bounded number so each is logged once, memory stays bounded.
UNKNOWN_PAGES_REMEMBERED = 256


class PageRegistry(Registry[PageSpec]):
    """Pages by name; `get()` of an unknown page gives the default page (and logs a warning once per name); a second
    page under a taken name is not registered but reported by a check (pages.E005)."""

    def __init__(self) -> None:
        super().__init__()
        self.unknown_requested: set[str] = set()

    def get(self, name: str | None) -> PageSpec:
        """The page called `name`; the default page when none is named or the name is unknown (logged once)."""
        spec = self._specs.get(name or "")
        if spec is not None:
            return spec
        if name:
            self.note_unknown(name)
        return DEFAULT_PAGE

    def note_unknown(self, name: str) -> None:
        """Log a page name that is not registered (the tray or a request named it); once per name, bounded."""
        if name in self.unknown_requested or len(self.unknown_requested) >= UNKNOWN_PAGES_REMEMBERED:
            return
        self.unknown_requested.add(name)
        logger.warning("chat page %r is not registered: using the default page (no page tools or payloads). "
                       "Register it with pages.registry.register_page in an app's assistant.py.", name[:100])

    def page_names(self) -> list[str]:
        """Every registered page's name, in registration order."""
        return list(self._specs)

    def where_used(self, *, tool: str | None = None, payload: str | None = None) -> list[str]:
        """Where pages name this tool or payload type: "page", "page/tab" or "page/tab/subtab"."""
        def named(spec: PageSpec | TabSpec) -> bool:
            return (tool is not None and tool in spec.tools) or (payload is not None and payload in spec.payloads)

        found: list[str] = []
        for page in self:
            found += [page.name] if named(page) else []
            for tab in page.tabs.values():
                found += [f"{page.name}/{tab.name}"] if named(tab) else []
                found += [f"{page.name}/{tab.name}/{sub.name}" for sub in tab.subtabs.values() if named(sub)]
        return found


registry = PageRegistry()
register_page = registry.register
