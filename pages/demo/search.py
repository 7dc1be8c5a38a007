"""Article search over the demo corpus: the database's own weighted full-text search (PostgreSQL tsvector with
setweight, SQLite FTS5 with bm25 column weights), a relevance threshold, and a portable fallback for other databases.
`manage.py search_quality` measures it."""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from pages.demo.models import Article

if TYPE_CHECKING:
    from django.contrib.postgres.search import SearchQuery

MAX_LIMIT = 100
MAX_TERMS = 12
CANDIDATES = 500  # rows ranked by the database before the threshold (the corpus is a few hundred articles)
FTS_TABLE = "pagechat_demo_article_fts"  # SQLite FTS5 index (migration 0003), kept in step by triggers
BM25_WEIGHTS = (10.0, 4.0, 1.0)  # SQLite bm25 column weights: title, keywords, abstract
RANK_WEIGHTS = [0.05, 0.1, 0.4, 1.0]  # PostgreSQL ts_rank weights for D, C (abstract), B (keywords), A (title)
MIN_COVERAGE = 0.25  # share of the query's IDF weight an article must match to count as relevant
RELATIVE_FLOOR = 0.1  # and its rank must be at least this share of the best match's
# The fallback ranks in Python, so it reads at most this many candidate rows (the corpus is a few hundred).
FALLBACK_CANDIDATES = 2000
# Words that carry no topical meaning in a research query ("papers about CRISPR in the last year").
STOPWORDS = frozenset(
    """a about after all also an and any are as at be been before being between both but by can could did do does
    during each few find for from had has have how i in into is it its latest me more most my new no not of on or
    other our out over paper papers article articles recent show some study studies such than that the their them
    then there these they this those through to under up using very was we were what when where which while who
    why will with within without would you your research best good""".split()
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
    """Best-matching articles for `query`, ranked by the database's weighted full-text search (title over keywords
    over abstract), at most `limit`; only articles above the relevance threshold, so [] means "no good match".

    A query with no meaningful terms returns the newest articles of `topic` when a topic is given, else [].
    """
    limit = _clamp(limit)
    if limit == 0:
        return []
    terms = query_terms(query or "")
    if not terms:
        return list(_base(topic).order_by("-published_date", "external_id")[:limit]) if topic else []
    if connection.vendor == "postgresql":
        ranked = _ranked_postgres(terms, topic)
    elif connection.vendor == "sqlite":
        ranked = _ranked_sqlite(terms, topic)
    else:
        return _search_fallback(terms, limit, topic)
    total = Article.objects.count()
    # SQLite's bm25 already weighs terms by IDF; PostgreSQL's ts_rank does not, so coverage counts twice there
    keep = relevant(ranked, terms, total, coverage_power=1 if connection.vendor == "sqlite" else 2)[:limit]
    by_pk = Article.objects.in_bulk([pk for pk, _, _ in keep])
    return [by_pk[pk] for pk, _, _ in keep if pk in by_pk]


Ranked = list[tuple[int, float, frozenset[str]]]  # (pk, database rank - bigger is better, terms it matched)


def relevant(ranked: Ranked, terms: list[str], total: int, *, coverage_power: int = 1) -> Ranked:
    """The relevance threshold: an article must match terms carrying MIN_COVERAGE of the query's IDF weight
    (a rare term like 'osimertinib' outweighs 'cancer'), and rank at least RELATIVE_FLOOR of the best match."""
    df = {t: sum(1 for _, _, matched in ranked if t in matched) for t in terms}
    weight = {t: idf(total, df[t]) for t in terms}
    whole = sum(weight.values()) or 1.0
    kept = []
    for pk, rank, matched in ranked:
        coverage = sum(weight[t] for t in matched) / whole
        if coverage >= MIN_COVERAGE:
            # the database's rank, scaled by coverage: an article matching every rare term beats one that repeats one
            kept.append((pk, rank * coverage**coverage_power, matched))
    if not kept:
        return []
    kept.sort(key=lambda row: -row[1])  # stable: equal scores keep the database's order
    best = kept[0][1]
    return [row for row in kept if row[1] >= RELATIVE_FLOOR * best]


def article_get(*, external_id: str) -> Article | None:
    """The article with this external id, or None."""
    return Article.objects.filter(external_id=str(external_id).strip()).first()


def idf(total: int, df: int) -> float:
    """Inverse document frequency: a rare term ('sickle') outweighs a common one ('cell', 'disease')."""
    return math.log(1.0 + total / max(df, 1))


def _ranked_postgres(terms: list[str], topic: str | None) -> Ranked:
    """PostgreSQL full-text search (english stemming): setweight A title, B keywords, C abstract; ts_rank with
    weights {D, C, B, A} = RANK_WEIGHTS over an OR of the terms; which terms each article matched, for the threshold."""
    # Imported here so the module imports on any backend; contrib.postgres is installed but only works on PostgreSQL.
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    vector = (
        SearchVector("title", weight="A", config="english")
        + SearchVector("keywords", weight="B", config="english")
        + SearchVector("abstract", weight="C", config="english")
    )
    # "plain" parses each term safely (user text never becomes tsquery syntax).
    term_queries = [SearchQuery(term, search_type="plain", config="english") for term in terms]
    any_term = _or_queries(term_queries)
    flags = {f"m{i}": Case(When(search=q, then=Value(1)), default=Value(0), output_field=IntegerField()) for i, q in enumerate(term_queries)}
    rows = (
        _base(topic).annotate(search=vector).filter(search=any_term)
        .annotate(rank=SearchRank(vector, any_term, weights=RANK_WEIGHTS), **flags)
        .order_by("-rank", "-published_date", "external_id")
        .values_list("pk", "rank", *flags)[:CANDIDATES]
    )
    return [(row[0], float(row[1]), frozenset(t for t, hit in zip(terms, row[2:]) if hit)) for row in rows]


def _ranked_sqlite(terms: list[str], topic: str | None) -> Ranked:
    """SQLite FTS5 (porter stemming): bm25 with column weights title > keywords > abstract over an OR of the terms,
    and one MATCH per term for which terms each article matched."""
    # Terms are [a-z0-9-] only (query_terms), each quoted as an FTS5 string: user text never becomes FTS syntax.
    quoted = [f'"{t}"' for t in terms]
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT rowid, -bm25({FTS_TABLE}, {weights}) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s "
            f"ORDER BY bm25({FTS_TABLE}, {weights}) LIMIT {CANDIDATES}", [" OR ".join(quoted)])
        rows = cursor.fetchall()
        matched: dict[int, set[str]] = {}
        for term, q in zip(terms, quoted):
            cursor.execute(f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [q])
            for (rowid,) in cursor.fetchall():
                matched.setdefault(rowid, set()).add(term)
    allowed = set(_base(topic).filter(pk__in=[r[0] for r in rows]).values_list("pk", flat=True)) if topic else None
    return [(pk, float(rank), frozenset(matched.get(pk, ()))) for pk, rank in rows if allowed is None or pk in allowed]


def _or_queries(queries: Iterable[SearchQuery]) -> Any:
    """Combine SearchQuery objects with |."""
    combined: Any = None
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
