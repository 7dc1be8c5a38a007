"""The demo's sources: the shared article corpus (every signed-in user), and each user's own research streams and
reports (never anyone else's). The reports page searches them and cites what it found."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy

from pages.demo.models import Article, Report, ResearchStream
from tools.sources.registry import register_source
from tools.sources.spec import Source

# words of research questions that name no topic ("papers about ...", "what does the research say")
DEMO_STOPWORDS = frozenset("paper papers article articles research study studies".split())


def articles_scope(user: Any, context: dict[str, Any]) -> QuerySet[Article]:
    """The corpus is shared: every signed-in user may read every article."""
    return Article.objects.all() if getattr(user, "is_authenticated", False) else Article.objects.none()


def streams_scope(user: Any, context: dict[str, Any]) -> QuerySet[ResearchStream]:
    """The user's own streams only."""
    return ResearchStream.objects.owned_by(user)


def reports_scope(user: Any, context: dict[str, Any]) -> QuerySet[Report]:
    """Reports of the user's own streams only."""
    return Report.objects.owned_by(user)


ARTICLES = register_source(Source(
    name="articles", model=Article, fields={"title": "A", "keywords": "B", "abstract": "C"}, scope=articles_scope,
    title="title", snippet="abstract", label=gettext_lazy("Articles"), stopwords=DEMO_STOPWORDS,
    offer_tool=False,  # search_articles (reports.py) searches it, with progress and a results card
))
STREAMS = register_source(Source(
    name="streams", model=ResearchStream, fields={"name": "A", "purpose": "B", "semantic": "C"}, scope=streams_scope,
    title="name", snippet="purpose", label=gettext_lazy("Your research streams"), stopwords=DEMO_STOPWORDS,
    description="Search the user's own research streams (name, purpose, topics); cite what you use with its [[source:N]] marker.",
))
REPORTS = register_source(Source(
    name="reports", model=Report, fields={"title": "A", "summary": "B"}, scope=reports_scope,
    title="title", snippet="summary", label=gettext_lazy("Your reports"), stopwords=DEMO_STOPWORDS,
    description="Search the user's own reports (title, summary); cite what you use with its [[source:N]] marker.",
))
