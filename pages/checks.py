"""System checks: every page names registered tools, payload types and server-action handlers."""
from __future__ import annotations

from typing import Any

from django.core import checks


def page_problems(pages: Any, tools: Any, payloads: Any) -> list[checks.CheckMessage]:
    """Problems of the given registries (tests pass their own instances)."""
    errors: list[checks.CheckMessage] = []
    for page in pages:
        scopes = [(page.name, page.tools, page.payloads)]
        for tab in page.tabs.values():
            scopes.append((f"{page.name}/{tab.name}", tab.tools, tab.payloads))
            scopes += [(f"{page.name}/{tab.name}/{sub.name}", sub.tools, sub.payloads) for sub in tab.subtabs.values()]
        for where, tool_names, payload_types in scopes:
            for name in tool_names:
                if name not in tools:
                    errors.append(checks.Error(f"page {where!r} names tool {name!r}, which is not registered", id="pages.E001", obj=page.name))
            for ptype in payload_types:
                if ptype not in payloads:
                    errors.append(checks.Error(f"page {where!r} names payload type {ptype!r}, which is not registered", id="pages.E002", obj=page.name))
        for action in page.server_actions:
            if not callable(action.handler):
                errors.append(checks.Error(f"page {page.name!r}: server action {action.action!r} has no callable handler", id="pages.E003"))
        seen: set[str] = set()
        for action in (*page.client_actions, *page.server_actions):
            if action.action in seen:
                errors.append(checks.Error(f"page {page.name!r}: action {action.action!r} is declared twice", id="pages.E004"))
            seen.add(action.action)
    return errors


@checks.register()
def check_pages(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from pages.registry import registry as pages
    from payloads.registry import registry as payloads
    from tools.registry import registry as tools

    return page_problems(pages, tools, payloads)
