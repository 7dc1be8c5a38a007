"""Reports page: search the article corpus (a streaming tool with progress) and open an article card."""
from __future__ import annotations

from collections.abc import Generator
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.urls import reverse
from django.utils.translation import gettext, gettext_lazy, ngettext
from pydantic import BaseModel, Field

from chat.agent.types import ToolContext, ToolProgress, ToolResult
from pages.demo.models import Report, ResearchStream
from pages.demo.search import article_get, article_search
from pages.demo.sources import ARTICLES
from pages.registry import ActionFailed, PageSpec, ServerAction, ServerActionResult, register_page
from payloads.registry import registry as payloads
from payloads.spec import PayloadSpec
from tools.registry import tool
from tools.sources.search import source_search
from tools.sources.tool import cite


def _results_summary(d: dict[str, Any]) -> str:
    count = len(d.get("articles", []))
    return ngettext("Search results for %(query)s: %(count)d article", "Search results for %(query)s: %(count)d articles", count) % {
        "query": repr(d.get("query", "?")), "count": count}


payloads.register(PayloadSpec(type="search_results", source="tool", description="articles found by a search", summarize=_results_summary,
                              title=gettext_lazy("Search results")))
payloads.register(PayloadSpec(type="pubmed_article", source="tool", description="one article shown as a card", title=gettext_lazy("Article"),
                              summarize=lambda d: gettext("Article %(id)s: %(title)s") % {"id": d.get("external_id", "?"), "title": d.get("title", "")}))


def _article_dict(a: Any, *, abstract: bool = False) -> dict[str, Any]:
    out = {"external_id": a.external_id, "title": a.title, "journal": a.journal, "published": a.published_date.isoformat(),
           "authors": list(a.authors or [])[:6], "url": f"/articles/{a.external_id}/"}
    if abstract:
        out["abstract"] = a.abstract
    return out


@tool(title=gettext_lazy("Search articles"))
def search_articles(query: str, limit: int = 8, *, ctx: ToolContext) -> Generator[ToolProgress, None, ToolResult]:
    """Search the research article corpus by keywords and show the matching articles; cite what you use with its [[source:N]] marker."""
    # its words are in the user's language (the turn's): the tray shows the progress, a model reads the result
    yield ToolProgress("searching", gettext("Searching the corpus for “%(query)s”…") % {"query": query}, 0.2)
    hits = source_search(ARTICLES, user=ctx.user, context=ctx.context, query=query, limit=max(1, min(limit, 20)))
    found = [h.obj for h in hits]
    count = len(found)
    yield ToolProgress("ranking", ngettext("Found %(count)d article, ranking…", "Found %(count)d articles, ranking…", count) % {"count": count},
                       0.7, data={"count": count})
    articles = [_article_dict(a) for a in found]
    cited = cite(ctx, hits)  # numbered for the answer's [[source:N]] markers and complete.payload.sources
    lines = (f"[[source:{c['n']}]] [{a['external_id']}] {a['title']} — {a['journal']} ({a['published'][:4]})" for c, a in zip(cited, articles))
    text = ngettext("Found %(count)d article for %(query)s:", "Found %(count)d articles for %(query)s:", count) % {"count": count, "query": repr(query)}
    text += "\n" + "\n".join(lines)
    missing = gettext("No articles match %(query)s.") % {"query": repr(query)}
    return ToolResult(text if found else missing, payload={"type": "search_results", "data": {"query": query, "articles": articles}},
                      sources=cited)


@tool(title=gettext_lazy("Open article"))
def get_article(article_id: str) -> ToolResult:
    """Get one article by its id (the number in brackets in search results) with its abstract, shown as an article card."""
    a = article_get(external_id=article_id.strip())
    if a is None:
        return ToolResult(gettext("No article with id %(id)s.") % {"id": repr(article_id)}, is_error=True)
    data = _article_dict(a, abstract=True)
    return ToolResult(f"{a.title}\n{a.journal}, {a.published_date:%Y}\n\n{a.abstract}", payload={"type": "pubmed_article", "data": data})


class SearchFilters(BaseModel):
    """What to search for in the article corpus (execute_search) or which reports to list (apply_filters)."""

    query: str = Field(default="", max_length=300)
    topic: str | None = Field(default=None, max_length=64)
    year_from: int | None = Field(default=None, ge=1900, le=2100)
    year_to: int | None = Field(default=None, ge=1900, le=2100)
    journal: str | None = Field(default=None, max_length=200)
    stream_id: int | None = None


class AiColumnSuggestion(BaseModel):
    column_name: str = Field(min_length=1, max_length=80)
    description: str = ""
    prompt: str = Field(default="", max_length=2000)
    example_values: list[str] = Field(default_factory=list, max_length=10)


payloads.register(PayloadSpec(
    type="search_filters",
    title=gettext_lazy("Search filters"),
    parse_marker="SEARCH_FILTERS:",
    description="filter criteria for finding articles or reports (query, topic, years, journal)",
    llm_instructions="Use it when the user asks to find or filter articles or reports; offer execute_search and apply_filters with the same data.",
    schema=SearchFilters,
    summarize=lambda d: gettext("Filters: %(filters)s") % {"filters": ", ".join(f"{k}={v}" for k, v in d.items() if v not in (None, "", []))},
    example={"query": "{topic}", "year_from": 2022},
))
payloads.register(PayloadSpec(
    type="ai_column_suggestion",
    title=gettext_lazy("AI column suggestion"),
    parse_marker="AI_COLUMN_SUGGESTION:",
    description="a suggested AI-computed column for a table, with the prompt that fills it",
    schema=AiColumnSuggestion,
    summarize=lambda d: gettext("AI column: %(name)s") % {"name": d.get("column_name", "?")},
    example={"column_name": "{Topic} relevance", "description": "How relevant each report is to {topic}",
             "prompt": "Rate from 1 to 5 how much this report is about {topic}.", "example_values": ["5", "3", "1"]},
))

FILTER_RESULTS_SHOWN = 10


def _filters(data: dict[str, Any]) -> SearchFilters:
    filters = SearchFilters.model_validate(data)
    if filters.year_from and filters.year_to and filters.year_from > filters.year_to:
        raise ActionFailed(gettext("The years are reversed (%(start)s > %(end)s).") % {"start": filters.year_from, "end": filters.year_to})
    return filters


def execute_search(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
    """Run the article search with the filters; the results are the reply's card."""
    f = _filters(data)
    if not f.query.strip() and not f.topic:
        raise ActionFailed(gettext("A search needs a query or a topic."))
    found = [a for a in article_search(query=f.query, limit=100, topic=f.topic)
             if (f.year_from is None or a.published_date.year >= f.year_from)
             and (f.year_to is None or a.published_date.year <= f.year_to)
             and (not f.journal or f.journal.lower() in a.journal.lower())]
    articles = [_article_dict(a) for a in found[:FILTER_RESULTS_SHOWN]]
    if len(found) > len(articles):
        message = ngettext("Found %(count)d article matching your criteria (showing %(shown)d).",
                           "Found %(count)d articles matching your criteria (showing %(shown)d).", len(found))
    else:
        message = ngettext("Found %(count)d article matching your criteria.", "Found %(count)d articles matching your criteria.", len(found))
    return ServerActionResult(
        message=message % {"count": len(found), "shown": len(articles)},
        payload={"type": "search_results", "data": {"query": f.query or f.topic or "", "articles": articles, "total": len(found)}},
        suggested_actions=[{"label": gettext("Close"), "action": "close", "handler": "client", "style": "secondary"}],
        refresh=True,
    )


def apply_filters(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
    """Filter the reports list of this page (the page reloads with the filters); replies with how many match."""
    f = _filters(data)
    reports = Report.objects.owned_by(user)
    params: dict[str, str] = {}
    if f.stream_id is not None:
        if not ResearchStream.objects.owned_by(user).filter(pk=f.stream_id).exists():
            raise ActionFailed(gettext("That stream no longer exists (or is not yours)."))
        reports, params["stream"] = reports.filter(stream_id=f.stream_id), str(f.stream_id)
    text = (f.query or f.topic or "").strip()
    if text:
        reports, params["q"] = reports.filter(title__icontains=text) | reports.filter(summary__icontains=text), text
    if f.year_from:
        reports, params["year_from"] = reports.filter(created_at__year__gte=f.year_from), str(f.year_from)
    if f.year_to:
        reports, params["year_to"] = reports.filter(created_at__year__lte=f.year_to), str(f.year_to)
    count = reports.distinct().count()
    route = reverse("pages:reports_list") + ("?" + urlencode(params) if params else "")
    return ServerActionResult(
        message=ngettext("Filtered the reports list: %(count)d report matches.", "Filtered the reports list: %(count)d reports match.", count)
        % {"count": count},
        payload={"type": "search_filters", "data": {**f.model_dump(exclude_none=True), "applied": True, "route": route, "count": count}},
        suggested_actions=[{"label": gettext("Close"), "action": "close", "handler": "client", "style": "secondary"}],
        refresh=True,
    )


def reports_context(context: dict[str, Any], user: User) -> str:
    """The article on screen (read from the corpus by its id), the report being read, or the user's reports."""
    article_id = context.get("article_id")
    if context.get("entity_type") == "article" and isinstance(article_id, str):
        article = article_get(external_id=article_id)
        if article is not None:
            return (f"The user is reading an article of the corpus.\nArticle: {article.title} (id {article.external_id})\n"
                    f"Journal: {article.journal}, {article.published_date:%Y}\nAuthors: {article.author_line or '(none)'}\n"
                    f"Keywords: {', '.join(article.keywords or []) or '(none)'}\nAbstract: {' '.join(article.abstract.split())[:1500]}")
    reports = Report.objects.owned_by(user).select_related("stream")
    report_id = context.get("report_id")
    if isinstance(report_id, int):
        report = reports.filter(pk=report_id).prefetch_related("articles").first()
        if report is not None:
            articles = list(report.articles.all()[:30])
            titles = "\n".join(f"- [{a.external_id}] {a.title}" for a in articles)
            return (f"The user is reading a report.\nReport: {report.title} (id {report.pk})\nStream: {report.stream.name}\n"
                    f"Created: {report.created_at:%Y-%m-%d}\nSummary: {report.summary}\nArticles: {report.articles.count()}\n{titles}")
    # `Key: value` facts, one `Report:` line each: the offline model answers "what reports do I have?" from them
    latest = [f"Report: {r.title} (stream {r.stream.name}, {r.created_at:%Y-%m-%d})" for r in reports[:10]]
    if not latest:
        return "The user is on the reports page. They have no reports yet."
    return "The user is on the reports page. Their latest reports:\n" + "\n".join(latest)


register_page(PageSpec(
    name="reports",
    identity="You are the Knowledge Horizon assistant on the reports page. You find and explain research articles.",
    context_builder=reports_context,
    tools=("search_articles", "get_article", "search_streams", "search_reports"),
    payloads=("search_results", "pubmed_article", "search_filters", "query_suggestion", "ai_column_suggestion"),
    server_actions=(
        ServerAction("execute_search", "Run an article search with the proposed search filters", execute_search,
                     ("query", "topic", "year_from", "year_to", "journal")),
        ServerAction("apply_filters", "Apply the proposed filters to the reports list on this page", apply_filters,
                     ("query", "stream_id", "year_from", "year_to")),
    ),
    title=gettext_lazy("Reports"),
    starters=(gettext_lazy("Search articles"), gettext_lazy("What reports do I have?"), gettext_lazy("What is this about?"),
              gettext_lazy("What can you do here?")),
))
