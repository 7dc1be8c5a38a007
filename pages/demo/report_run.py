"""The "Run test report" server action: a report generated now from a stream's queries over the corpus."""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext, ngettext

from pages.demo.models import Article, Report, ResearchStream
from pages.demo.search import article_search
from pages.registry import ServerAction, ServerActionResult

REPORT_SIZE = 10
PER_QUERY = 5
MAX_QUERIES = 8


def stream_queries(stream: ResearchStream) -> list[str]:
    """What the stream searches for: its retrieval queries, else its channels' keywords, else its topics."""
    queries = [q for q in stream.queries if q.strip()]
    if not queries:
        queries = [" ".join(c.keywords) for c in stream.channels.all() if c.keywords]
    if not queries:
        queries = list(stream.topics)
    return list(dict.fromkeys(queries))[:MAX_QUERIES]


def report_test_run(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
    """Search the corpus with each of the stream's queries, keep the best articles, save them as a report of the
    stream and show it in the conversation. Only the user's own stream."""
    try:
        stream_id = int(data.get("stream_id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ServerActionResult(message=gettext("This test report names no stream."),
                                  suggested_actions=[{"label": gettext("Close"), "action": "close", "handler": "client"}])
    stream = ResearchStream.objects.owned_by(user).filter(pk=stream_id).prefetch_related("channels").first()
    if stream is None:
        return ServerActionResult(message=gettext("That stream no longer exists, so there is nothing to report on."),
                                  suggested_actions=[{"label": gettext("Close"), "action": "close", "handler": "client"}])
    queries = stream_queries(stream)
    found: dict[int, Article] = {}
    for query in queries:
        for article in article_search(query=query, limit=PER_QUERY):
            found.setdefault(article.pk, article)
    articles = list(found.values())[:REPORT_SIZE]
    if not articles:
        return ServerActionResult(
            message=ngettext("I ran **%(name)s**'s %(count)d query over the corpus: no article fits it yet. Try broader queries on the stream's "
                             "retrieval tab.",
                             "I ran **%(name)s**'s %(count)d queries over the corpus: no article fits them yet. Try broader queries on the stream's "
                             "retrieval tab.", len(queries)) % {"name": stream.name, "count": len(queries)},
            suggested_actions=[{"label": gettext("Edit retrieval"), "action": "navigate", "handler": "client",
                                "data": {"route": f"{stream.get_absolute_url()}?tab=retrieval"}, "style": "primary"},
                               {"label": gettext("Close"), "action": "close", "handler": "client"}])
    with transaction.atomic():
        report = Report.objects.create(
            stream=stream, title=f"Test report: {stream.name}",
            summary=f"Generated on request from {len(queries)} queries ({'; '.join(queries)}): {len(articles)} articles.")
        report.articles.set(articles)
    top = "\n".join(f"- [{a.title}](/articles/{a.external_id}/) — {a.journal}, {a.published_date:%Y}" for a in articles[:3])
    return ServerActionResult(
        message=gettext("✓ Test report for **%(name)s**: %(articles)s from %(queries)s. The first ones:") % {
            "name": stream.name,
            "articles": ngettext("%(count)d article", "%(count)d articles", len(articles)) % {"count": len(articles)},
            "queries": ngettext("%(count)d query", "%(count)d queries", len(queries)) % {"count": len(queries)},
        } + f"\n{top}",
        suggested_actions=[
            {"label": gettext("Open report"), "action": "navigate", "handler": "client", "data": {"route": report.get_absolute_url()}, "style": "primary"},
            {"label": gettext("View stream"), "action": "navigate", "handler": "client", "data": {"route": stream.get_absolute_url()}},
            {"label": gettext("Close"), "action": "close", "handler": "client"},
        ],
        payload={"type": "search_results", "data": {"query": "; ".join(queries), "articles": [
            {"external_id": a.external_id, "title": a.title, "journal": a.journal, "published": a.published_date.isoformat(),
             "authors": list(a.authors or [])[:6], "url": f"/articles/{a.external_id}/"} for a in articles]}},
        # pages showing report counts or lists update at once (pagechat:changed)
        changes=[{"entity": "report", "id": report.pk, "kind": "created", "fields": {"title": report.title, "stream_id": stream.pk}}],
    )


TEST_REPORT_ACTION = ServerAction(
    "run_test_report", "Generate a test report now from the stream's queries over the article corpus", report_test_run, ("stream_id",))


def report_test_button(stream: ResearchStream) -> dict[str, Any]:
    """The signed-on-send button that runs a test report of `stream`."""
    return {"label": gettext("Run test report"), "action": "run_test_report", "handler": "server", "data": {"stream_id": stream.pk}}
