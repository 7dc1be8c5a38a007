"""A source as a search tool: the model searches as the user; the result numbers what it found for citing."""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext, ngettext

from chat.agent.types import ToolContext, ToolResult
from tools.sources.citations import ledger_of
from tools.sources.search import MAX_LIMIT, Hit, source_search
from tools.sources.spec import Source
from tools.spec import ToolSpec, spec_from_function


def source_tool_spec(source: Source) -> ToolSpec:
    """The search tool of `source` (named `source.search_tool_name`, gated by the source's permissions)."""
    def search(query: str, limit: int = source.limit, *, ctx: ToolContext) -> ToolResult:
        hits = source_search(source, user=ctx.user, context=ctx.context, query=query, limit=max(1, min(limit, MAX_LIMIT)))
        label = source.display_label()
        if not hits:
            return ToolResult(gettext("Nothing in %(source)s matches %(query)s.") % {"source": label, "query": repr(query)})
        entries = cite(ctx, hits)
        head = ngettext("Found %(count)d result in %(source)s for %(query)s:", "Found %(count)d results in %(source)s for %(query)s:",
                        len(hits)) % {"count": len(hits), "source": label, "query": repr(query)}
        lines = [f"[[source:{e['n']}]] {e['title']} — {e['snippet']}" for e in entries]
        hint = gettext("Cite a result where you use it by writing its marker, e.g. [[source:%(n)d]].") % {"n": entries[0]["n"]}
        return ToolResult("\n".join([head, *lines, hint]), sources=[dict(e) for e in entries])

    description = source.description or f"Search {source.display_label()} by keywords; cite what you use with its [[source:N]] marker."
    # its title is derived from the name ("search_streams" -> "Search streams")
    return spec_from_function(search, name=source.search_tool_name, description=description, permissions=source.permissions,
                              tags=("source",))


def cite(ctx: ToolContext, hits: list[Hit]) -> list[dict[str, Any]]:
    """Number `hits` in the turn's citations; put the returned entries in `ToolResult.sources` and their
    `[[source:N]]` markers in its text (for a host's own tool that searches a source with `source_search`)."""
    return ledger_of(ctx.services).add(hits)
