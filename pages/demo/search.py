"""Article search over the demo corpus: PostgreSQL full-text search when available, a portable fallback otherwise."""
from __future__ import annotations

import math
import re
from collections.abc import Iterable

from django.db import connection
from django.db.models import Case, Count, FloatField, Q, QuerySet, Value, When

from pages.demo.models import Article

MAX_LIMIT = 100
MAX_TERMS = 12
# The fallback ranks in Python, so it reads at most this many candidate rows (the corpus is a few hundred).
FALLBACK_CANDIDATES = 2000
# Words that carry no topical meaning in a research query ("papers about CRISPR in the last year").
STOPWORDS = frozenset(
    """a about after all also an and any are as at be been before being between both but by can could did do does
    during each few find for from had has have how i in into is it its latest me more most my new no not of on or
    other our out over paper papers article articles recent show some study studies such than that the their them
    then there these they this those through to under up using very was we were what when where which while who
    why will with within without would you your""".split()
)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9\-]*[a-z0-9]|[a-z0-9]")


def query_terms(query: str) -> list[str]:
    """Lower-cased search terms of `query`: words and hyphenated words; stopwords, 1-char tokens and repeats dropped; capped."""
    terms: list[str] = []
    for token in _TOKEN.findall(query.lower()):
        # Single characters ("a", "5") match nearly every abstract as substrings and carry no topic.
        if len(token) < 2 or token in STOPWORDS or token in terms:
            continue
        terms.append(token)
    return terms[:MAX_TERMS]


def _clamp(limit: int) -> int:
    """Limit bounded to [0, MAX_LIMIT] so a tool or URL parameter can't ask for the whole table."""
    return max(0, min(int(limit), MAX_LIMIT))


def _base(topic: str | None) -> QuerySet[Article]:
    """All articles, narrowed to `topic` (case-insensitive slug) when given."""
    articles = Article.objects.all()
    return articles.filter(topic__iexact=topic.strip()) if topic and topic.strip() else articles


def article_search(*, query: str, limit: int = 10, topic: str | None = None) -> list[Article]:
    """Best-matching articles for `query` (any term may match; more and rarer matched terms rank higher), at most `limit`.

    A query with no meaningful terms returns the newest articles of `topic` when a topic is given, else [].
    """
    limit = _clamp(limit)
    if limit == 0:
        return []
    terms = query_terms(query or "")
    if not terms:
        return list(_base(topic).order_by("-published_date", "external_id")[:limit]) if topic else []
    if connection.vendor == "postgresql":
        return _search_postgres(terms, limit, topic)
    return _search_fallback(terms, limit, topic)


def article_get(*, external_id: str) -> Article | None:
    """The article with this external id, or None."""
    return Article.objects.filter(external_id=str(external_id).strip()).first()


def idf(total: int, df: int) -> float:
    """Inverse document frequency: a rare term ('sickle') outweighs a common one ('cell', 'disease')."""
    return math.log(1.0 + total / max(df, 1))


def _search_postgres(terms: list[str], limit: int, topic: str | None) -> list[Article]:
    """Full-text search (english stemming): OR of the terms, ranked by IDF-weighted terms matched, then ts_rank."""
    # Imported here so the module imports on any backend; contrib.postgres is installed but only works on PostgreSQL.
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    vector = (
        SearchVector("title", weight="A", config="english")
        + SearchVector("keywords", weight="B", config="english")
        + SearchVector("abstract", weight="C", config="english")
    )
    # "plain" parses each term safely (user text never becomes tsquery syntax).
    term_queries = [SearchQuery(term, search_type="plain", config="english") for term in terms]
    base = _base(topic).annotate(search=vector)
    # One aggregate query for the document frequency of every term.
    counts = base.aggregate(
        total=Count("pk"), **{f"t{i}": Count("pk", filter=Q(search=q)) for i, q in enumerate(term_queries)}
    )
    # OR, so a multi-word question still finds articles matching most of its terms. ts_rank alone would let one
    # frequent term in a title outrank an article matching every rare term, so IDF-weighted coverage sorts first
    # (the same order as the portable fallback) and ts_rank (title > keywords > abstract) breaks ties.
    coverage = sum(
        (
            Case(When(search=q, then=Value(idf(counts["total"], counts[f"t{i}"]))), default=Value(0.0),
                 output_field=FloatField())
            for i, q in enumerate(term_queries)
        ),
        start=Value(0.0, output_field=FloatField()),
    )
    any_term = _or_queries(term_queries)
    return list(
        base.filter(search=any_term)
        .annotate(coverage=coverage, rank=SearchRank(vector, any_term))
        .order_by("-coverage", "-rank", "-published_date", "external_id")[:limit]
    )


def _or_queries(queries: Iterable[object]) -> object:
    """Combine SearchQuery objects with |."""
    combined = None
    for q in queries:
        combined = q if combined is None else combined | q
    return combined


def _stem(term: str) -> str:
    """Crude plural folding for substring matching ('tumors' -> 'tumor'); short words are left alone."""
    if len(term) > 4 and term.endswith("ies"):
        return term[:-3] + "y"
    if len(term) > 4 and term.endswith("s") and not term.endswith("ss"):
        return term[:-1]
    return term


def _search_fallback(terms: list[str], limit: int, topic: str | None) -> list[Article]:
    """Portable search: icontains OR over title/abstract/keywords, then rank in Python by IDF-weighted matched terms."""
    stems = list(dict.fromkeys(_stem(term) for term in terms))
    condition = Q()
    for stem in stems:
        condition |= Q(title__icontains=stem) | Q(abstract__icontains=stem) | Q(keywords__icontains=stem)
    base = _base(topic)
    total = base.count()
    candidates = list(base.filter(condition)[:FALLBACK_CANDIDATES])

    def fields(article: Article) -> tuple[str, str, str]:
        return article.title.lower(), " ".join(article.keywords or []).lower(), article.abstract.lower()

    texts = {article.pk: fields(article) for article in candidates}
    # Every article containing a term is a candidate, so these are exact document frequencies
    # (an underestimate only if the candidate cap is hit, which a few-hundred-article corpus never does).
    weights = {
        stem: idf(total, sum(any(stem in text for text in texts[a.pk]) for a in candidates)) for stem in stems
    }

    def score(article: Article) -> tuple[float, int, str, str]:
        """(IDF-weighted terms matched, title/keyword/abstract hits, date, id) - bigger is better."""
        title, keywords, abstract = texts[article.pk]
        coverage = 0.0
        field_hits = 0
        for stem in stems:
            hits = 3 * (stem in title) + 2 * (stem in keywords) + (stem in abstract)
            coverage += weights[stem] if hits else 0.0
            field_hits += hits
        return round(coverage, 9), field_hits, article.published_date.isoformat(), article.external_id

    candidates.sort(key=score, reverse=True)
    return candidates[:limit]
