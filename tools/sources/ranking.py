"""What every backend shares: a query's terms (user text never becomes query syntax) and the relevance threshold
applied to the database's ranking, so an empty answer means "no good match"."""
from __future__ import annotations

import math
import re

MAX_TERMS = 12
MIN_COVERAGE = 0.25  # share of the query's IDF weight an object must match to count as relevant
RELATIVE_FLOOR = 0.1  # and its rank must be at least this share of the best match's
# Words that carry no topical meaning in a question ("what do the notes say about ...")
STOPWORDS = frozenset(
    """a about after all also an and any are as at be been before being between both but by can could did do does
    during each few find for from had has have how i in into is it its latest me more most my new no not of on or
    other our out over recent show some such than that the their them then there these they this those through to
    under up using very was we were what when where which while who why will with within without would you your
    best good say says said tell know""".split()
)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9\-]*[a-z0-9]|[a-z0-9]")

Ranked = list[tuple[str, float, frozenset[str]]]  # (object pk as text, database rank - bigger is better, terms it matched)


def query_terms(query: str, extra_stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Lower-cased search terms: words and hyphenated words ([a-z0-9-] only); stopwords, 1-char tokens, repeats dropped; capped."""
    terms: list[str] = []
    for token in _TOKEN.findall((query or "").lower()):
        if len(token) < 2 or token in STOPWORDS or token in extra_stopwords or token in terms:
            continue
        terms.append(token)
    return terms[:MAX_TERMS]


def idf(total: int, df: int) -> float:
    """Inverse document frequency: a rare term outweighs a common one."""
    return math.log(1.0 + total / max(df, 1))


def relevant(ranked: Ranked, terms: list[str], total: int, *, coverage_power: int = 1) -> Ranked:
    """Keep objects matching terms that carry MIN_COVERAGE of the query's IDF weight and ranking at least RELATIVE_FLOOR
    of the best; the database's rank is scaled by coverage (matching every rare term beats repeating one)."""
    df = {t: sum(1 for _, _, matched in ranked if t in matched) for t in terms}
    weight = {t: idf(total, df[t]) for t in terms}
    whole = sum(weight.values()) or 1.0
    kept = []
    for pk, rank, matched in ranked:
        coverage = sum(weight[t] for t in matched) / whole
        if coverage >= MIN_COVERAGE:
            kept.append((pk, rank * coverage**coverage_power, matched))
    if not kept:
        return []
    kept.sort(key=lambda row: -row[1])  # stable: equal scores keep the database's order
    best = kept[0][1]
    return [row for row in kept if row[1] >= RELATIVE_FLOOR * best]
