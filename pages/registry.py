"""The page registry: what each page tells the agent (identity, context, tools, payloads, actions)."""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.functional import Promise

from chat.registration import Duplicate, caller_origin, title_shown

logger = logging.getLogger(__name__)
# Unknown page names come from browsers: remember a bounded number so each is logged once, memory stays bounded.
UNKNOWN_PAGES_REMEMBERED = 256

ContextBuilder = Callable[[dict[str, Any], Any], str]  # (request context, user) -> CONTEXT text


@dataclass(frozen=True)
class ClientAction:
    """A button the browser runs; `parameters` name the keys of its `data`."""

    action: str
    description: str
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerActionResult:
    """What a server action handler returns: the same parts as a turn, optionally asking for a model turn."""

    message: str
    suggested_values: list[dict[str, Any]] = field(default_factory=list)
    suggested_actions: list[dict[str, Any]] = field(default_factory=list)
    payload: dict[str, Any] | None = None
    continue_with_model: bool = False
    refresh: bool = False  # the action changed what the page shows: the tray tells the page (`pagechat:refresh`)
    # the records it changed ({entity, id, kind: created|updated|deleted, fields?}): the tray tells the page each one
    # (`pagechat:changed`), so it can show them without a reload
    changes: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = True  # False: the action ran but did not do what was asked (counted as failed)


class ActionFailed(Exception):
    """Raised by a server action handler: the action could not be done; `message` is shown to the user.

    The handler runs in a transaction that is rolled back, so nothing it wrote stays."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ServerAction:
    """An action the server runs on a signed request: `handler(data, user, context) -> ServerActionResult`."""

    action: str
    description: str
    handler: Callable[[dict[str, Any], Any, dict[str, Any]], ServerActionResult]
    parameters: tuple[str, ...] = ()
    permissions: Sequence[str] = ()  # Django permission strings, all required (else never offered, never run); kept as a tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "permissions", tuple(self.permissions))


@dataclass(frozen=True)
class TabSpec:
    name: str
    tools: tuple[str, ...] = ()
    payloads: tuple[str, ...] = ()
    subtabs: dict[str, TabSpec] = field(default_factory=dict)
    # What people read for the tab ("Retrieval"; a lazy translation is translated where it is shown); "" derives it
    # from the name, through the catalogs
    title: str | Promise = ""

    def display_title(self) -> str:
        """The tab's title in the active language (its own, else derived from its name)."""
        return title_shown(self.title, self.name)


@dataclass(frozen=True)
class PageSpec:
    name: str
    identity: str = ""
    context_builder: ContextBuilder | None = None
    tools: tuple[str, ...] = ()
    payloads: tuple[str, ...] = ()
    tabs: dict[str, TabSpec] = field(default_factory=dict)
    client_actions: tuple[ClientAction, ...] = ()
    server_actions: tuple[ServerAction, ...] = ()
    custom_instructions: str = ""
    permissions: Sequence[str] = ()  # Django permission strings, all required to chat on this page; kept as a tuple
    # What people read for the page ("Research streams"; a lazy translation is translated where it is shown); ""
    # derives it from the name ("research_streams" -> "Research streams")
    title: str | Promise = ""
    # First questions the tray's welcome offers as buttons that send them (3-4, task-shaped, translatable with
    # gettext_lazy); () offers defaults from the page's tools and payload types (pages.starters)
    starters: Sequence[str | Promise] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "permissions", tuple(self.permissions))
        object.__setattr__(self, "starters", tuple(self.starters))

    def display_title(self) -> str:
        """The page's title in the active language (its own, else derived from its name)."""
        return title_shown(self.title, self.name)

    def tab_chain(self, context: dict[str, Any]) -> list[TabSpec]:
        """The active tab and subtab named by the request context, outermost first."""
        chain: list[TabSpec] = []
        tab = self.tabs.get(str(context.get("active_tab") or ""))
        if tab is not None:
            chain.append(tab)
            sub = tab.subtabs.get(str(context.get("active_subtab") or ""))
            if sub is not None:
                chain.append(sub)
        return chain

    def tool_names(self, context: dict[str, Any]) -> list[str]:
        """Page tools + active tab's + subtab's (globals are added by the tool registry)."""
        names = list(self.tools)
        for tab in self.tab_chain(context):
            names += tab.tools
        return names

    def payload_types(self, context: dict[str, Any]) -> list[str]:
        names = list(self.payloads)
        for tab in self.tab_chain(context):
            names += tab.payloads
        return names

    def server_action(self, name: str) -> ServerAction | None:
        return next((a for a in self.server_actions if a.action == name), None)

    def client_action(self, name: str) -> ClientAction | None:
        return next((a for a in self.client_actions if a.action == name), None)


# Built into every tray (static/chat/registry.js); pages add their own.
BUILTIN_CLIENT_ACTIONS: tuple[ClientAction, ...] = (
    ClientAction("close", "Close the chat tray."),
    ClientAction("cancel", "Reset the conversation and close the tray."),
    ClientAction("navigate", "Go to a page of this site.", ("route",)),
    ClientAction("copy", "Copy text to the clipboard.", ("text",)),
    ClientAction("highlight", "Highlight an element on the page.", ("selector",)),
    ClientAction("download", "Download a file from this site.", ("url", "filename")),
    ClientAction("restart", "Start a new conversation."),
)

DEFAULT_PAGE = PageSpec(name="default")


class PageRegistry:
    """Pages by name; `get()` of an unknown page gives the default page (and logs a warning once per name)."""

    def __init__(self) -> None:
        self._pages: dict[str, PageSpec] = {}
        self._origins: dict[str, str] = {}
        self.duplicates: list[Duplicate] = []
        self.unknown_requested: set[str] = set()

    def register(self, spec: PageSpec, *, origin: str | None = None) -> PageSpec:
        """Add a page; another page under a taken name from elsewhere is recorded in `duplicates`, not added."""
        origin = origin or caller_origin(__file__)
        known = self._pages.get(spec.name)
        if known is not None and known is not spec and self._origins.get(spec.name) != origin:
            self.duplicates.append(Duplicate(spec.name, self._origins[spec.name], origin))
            return spec
        self._pages[spec.name] = spec
        self._origins[spec.name] = origin
        return spec

    def unregister(self, name: str) -> None:
        self._pages.pop(name, None)
        self._origins.pop(name, None)

    def origin(self, name: str) -> str:
        """Where the page called `name` was registered (`file:line`), or ""."""
        return self._origins.get(name, "")

    def get(self, name: str | None) -> PageSpec:
        """The page called `name`; the default page when none is named or the name is unknown (logged once)."""
        spec = self._pages.get(name or "")
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

    def __contains__(self, name: object) -> bool:
        return name in self._pages

    def __iter__(self) -> Iterator[PageSpec]:
        return iter(self._pages.values())

    def page_names(self) -> list[str]:
        """Every registered page's name, in registration order."""
        return list(self._pages)

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
