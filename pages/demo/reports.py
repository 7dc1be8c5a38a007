"""Reports page: search the article corpus (a streaming tool with progress) and open an article card."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chat.agent.types import ToolProgress, ToolResult
from pages.demo.models import Report
from pages.registry import PageSpec, register_page
from pages.demo.search import article_get, article_search
from payloads.registry import registry as payloads
from payloads.spec import PayloadSpec
from tools.registry import tool

payloads.register(PayloadSpec(type="search_results", source="tool", description="articles found by a search",
                              summarize=lambda d: f"Search results for {d.get('query', '?')!r}: {len(d.get('articles', []))} articles"))
payloads.register(PayloadSpec(type="pubmed_article", source="tool", description="one article shown as a card",
                              summarize=lambda d: f"Article {d.get('external_id', '?')}: {d.get('title', '')}"))


def _article_dict(a: Any, *, abstract: bool = False) -> dict[str, Any]:
    out = {"external_id": a.external_id, "title": a.title, "journal": a.journal, "published": a.published_date.isoformat(),
           "authors": list(a.authors or [])[:6], "url": f"/articles/{a.external_id}/"}
    if abstract:
        out["abstract"] = a.abstract
    return out


@tool
def search_articles(query: str, limit: int = 8) -> Iterator[ToolProgress]:
    """Search the research article corpus by keywords and show the matching articles."""
    yield ToolProgress("searching", f"Searching the corpus for “{query}”…", 0.2)
    found = article_search(query=query, limit=max(1, min(limit, 20)))
    yield ToolProgress("ranking", f"Found {len(found)} articles, ranking…", 0.7, data={"count": len(found)})
    articles = [_article_dict(a) for a in found]
    text = f"Found {len(found)} articles for {query!r}:\n" + "\n".join(f"[{a['external_id']}] {a['title']} — {a['journal']} ({a['published'][:4]})" for a in articles)
    return ToolResult(text if found else f"No articles match {query!r}.", payload={"type": "search_results", "data": {"query": query, "articles": articles}})


@tool
def get_article(article_id: str) -> ToolResult:
    """Get one article by its id (the number in brackets in search results) with its abstract, shown as an article card."""
    a = article_get(external_id=article_id.strip())
    if a is None:
        return ToolResult(f"No article with id {article_id!r}.", is_error=True)
    data = _article_dict(a, abstract=True)
    return ToolResult(f"{a.title}\n{a.journal}, {a.published_date:%Y}\n\n{a.abstract}", payload={"type": "pubmed_article", "data": data})


def reports_context(context: dict[str, Any], user: Any) -> str:
    reports = Report.objects.filter(stream__owner=user).select_related("stream")
    report_id = context.get("report_id")
    if isinstance(report_id, int):
        report = reports.filter(pk=report_id).prefetch_related("articles").first()
        if report is not None:
            titles = "\n".join(f"- [{a.external_id}] {a.title}" for a in report.articles.all()[:30])
            return f"The user is reading the report “{report.title}” of stream {report.stream.name}.\nSummary: {report.summary}\nArticles:\n{titles}"
    names = ", ".join(r.title for r in reports[:10]) or "none yet"
    return f"The user is on the reports page. Their reports: {names}."


register_page(PageSpec(
    name="reports",
    identity="You are the Knowledge Horizon assistant on the reports page. You find and explain research articles.",
    context_builder=reports_context,
    tools=("search_articles", "get_article"),
    payloads=("search_results", "pubmed_article"),
))
