"""`manage.py search_quality`: precision of the demo's article search over demo queries with expected topics."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from pages.demo.models import Article
from pages.demo.search import article_search
from pages.demo.search_quality import TOP_K, quality_measure
from pages.demo.sources import ARTICLES
from tools.sources.search import source_search


def source_articles(*, query: str, limit: int) -> list[Article]:
    """The articles source as the assistant searches it (any signed-in user sees the whole corpus)."""
    return [hit.obj for hit in source_search(ARTICLES, user=User(username="search_quality"), context={}, query=query, limit=limit)]


class Command(BaseCommand):
    help = "Measure the article search: precision of the top results on demo queries, and 'no good match' answers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--min-precision", type=float, default=0.0, help="Exit with an error below this precision.")
        parser.add_argument("--verbose-rows", action="store_true", help="Print every query's result.")
        parser.add_argument("--search", choices=("source", "article_search"), default="source",
                            help="What to measure: the articles source the assistant searches (default) or the demo's article_search.")

    def handle(self, *args: Any, min_precision: float, verbose_rows: bool, search: str, **options: Any) -> None:
        if not Article.objects.exists():
            raise CommandError("The corpus is empty: run `manage.py migrate` (or `manage.py demo_setup`) first.")
        report = quality_measure(source_articles if search == "source" else article_search)
        for row in report.rows:
            if verbose_rows or row["off_topic"] or (not row["expected"] and row["returned"]):
                expected = ", ".join(row["expected"]) or "no good match"
                self.stdout.write(f"  {row['relevant']}/{row['returned']}  {row['query']!r} (expect {expected})"
                                  + (f" off-topic: {', '.join(row['off_topic'])}" if row["off_topic"] else ""))
        self.stdout.write(
            f"search: {search}; database: {connection.vendor}; {len(report.topical)} topical queries, top {TOP_K}: "
            f"precision {report.precision:.3f} (relevant/returned), filled {report.filled:.3f} (relevant/{TOP_K} slots); "
            f"no-match queries answered with nothing: {report.no_match_correct}/{report.no_match_total}")
        if report.precision < min_precision:
            raise CommandError(f"precision {report.precision:.3f} is below {min_precision}")
