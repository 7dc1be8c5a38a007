"""The first questions the tray's welcome offers on a page: the page's own, else defaults from what it can do."""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from chat.infra.registration import title_shown
from pages.access import Access, server_action_denied
from pages.registry import PageSpec
from payloads.registry import registry as payload_registry
from tools.access import tools_filter
from tools.registry import registry as tool_registry

STARTERS_MAX = 4
STARTERS_MIN = 3  # defaults are filled up to this many with questions any page can answer


def page_starters(page: PageSpec, context: dict[str, Any], access: Access) -> list[str]:
    """Up to STARTERS_MAX first questions in the active language: the page's `starters`, else its own tools' titles
    (those this user may use; the active tab's too), its payload types' titles and its server actions this user may
    run, filled up with general questions."""
    if page.starters:
        return _unique(str(s) for s in page.starters)[:STARTERS_MAX]
    tools = [tool for name in page.tool_names(context) if (tool := tool_registry.get(name)) is not None and not tool.problems]
    found = [tool.display_title() for tool in tools_filter(access, tools).allowed] if tools else []  # no query for none
    found += [payload.display_title() for name in page.payload_types(context)
              if (payload := payload_registry.get(name)) is not None and payload.source == "llm"]
    found += [title_shown("", a.action) for a in page.server_actions if server_action_denied(access, a) is None]
    starters = _unique(found)[:STARTERS_MAX]
    for general in (gettext("What can you do here?"), gettext("Summarize this page")):
        if len(starters) < STARTERS_MIN and general not in starters:
            starters.append(general)
    return starters


def _unique(texts: Any) -> list[str]:
    """The non-blank texts, each once, in order, on one line each."""
    return list(dict.fromkeys(t for t in (" ".join(str(x).split()) for x in texts) if t))
