"""What a page tells the agent: its identity, context, tools, payload types, tabs and actions (registered in
pages.registry)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.functional import Promise

from chat.infra.registration import title_shown

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
