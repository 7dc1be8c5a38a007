"""The demo's web search backend: it has no internet search, so it searches the site's own article corpus and says so."""
from __future__ import annotations

from chat.agent.types import ToolContext
from pages.demo.search import article_search
from tools.builtin.web import WebSearchResults

BACKEND_NOTE = "Demo search backend: these results come from this site's own article corpus, not from the web."


def corpus_search(query: str, limit: int, ctx: ToolContext) -> WebSearchResults:
    """CHAT_WEB_SEARCH_BACKEND of the demo: the corpus articles best matching `query`, as web results."""
    found = article_search(query=query, limit=limit)
    return WebSearchResults(
        results=[{"title": a.title, "url": a.get_absolute_url(), "snippet": a.abstract[:200]} for a in found],
        backend=BACKEND_NOTE,
    )
