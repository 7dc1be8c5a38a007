"""The demo's search ranks with the database's weighted full-text search, keeps only relevant articles, and
answers "no good match" with nothing; `manage.py search_quality` measures it."""
from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from pages.demo.models import Article
from pages.demo.search import article_search
from pages.demo.search_quality import QUERIES, quality_measure

pytestmark = pytest.mark.django_db


def test_precision_over_the_demo_queries_and_no_good_match(corpus: Any) -> None:
    report = quality_measure(article_search)
    assert report.precision >= 0.95, report.rows
    assert report.filled >= 0.85, report.rows
    assert report.no_match_correct == report.no_match_total == sum(1 for _, topics in QUERIES if not topics)


def test_title_outranks_abstract(corpus: Any) -> None:
    in_title = Article.objects.filter(title__icontains="semaglutide").first()
    assert in_title is not None
    top = article_search(query="semaglutide", limit=3)
    assert top and all("semaglutide" in a.title.lower() for a in top)


def test_index_follows_edits_and_deletes(corpus: Any) -> None:
    article = Article.objects.order_by("pk").first()
    assert article is not None
    article.title = "Zymurgical fermentation of xylophagous beetles"
    article.save()
    assert [a.pk for a in article_search(query="zymurgical xylophagous", limit=5)] == [article.pk]
    article.delete()
    assert article_search(query="zymurgical xylophagous", limit=5) == []


def test_full_text_syntax_in_the_query_is_inert(corpus: Any) -> None:
    for query in ['"unbalanced', "NEAR(a b)", "title:crispr OR *", "a AND NOT b", "crispr) OR (1=1"]:
        article_search(query=query, limit=5)  # no database error


def test_command_reports_precision(corpus: Any) -> None:
    out = StringIO()
    call_command("search_quality", stdout=out)
    assert f"database: {connection.vendor}" in out.getvalue() and "precision 0.9" in out.getvalue()
