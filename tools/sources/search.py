"""A source searched as one user: the scope's queryset becomes a condition of the backend's ranked query, the
relevance threshold keeps good matches, and the objects are read back through the same scope."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connections, models
from django.db.models.functions import Cast

from tools.sources.index import backend_for
from tools.sources.ranking import query_terms, relevant
from tools.sources.spec import Source

MAX_LIMIT = 50


class ScopeError(TypeError):
    """The source's scope did not return a usable queryset of its model (a programming error: nothing is searched)."""


@dataclass(frozen=True)
class Hit:
    """One object found: what a citation shows of it."""

    source: str
    pk: str
    title: str
    url: str
    snippet: str
    obj: Any


def scoped(source: Source, user: Any, context: dict[str, Any] | None) -> models.QuerySet[Any]:
    """The objects `user` may see in this source, as the source's scope says (never the model's whole table by default)."""
    if source.scope is None:
        raise ScopeError(f"source {source.name!r} has no scope")
    qs = source.scope(user, dict(context or {}))
    if not isinstance(qs, models.QuerySet) or qs.model is not source.model:
        raise ScopeError(f"source {source.name!r}: scope must return a QuerySet of {source.model.__name__}")
    if qs.query.is_sliced:
        raise ScopeError(f"source {source.name!r}: scope must not slice its queryset")
    return qs


def source_search(source: Source, *, user: Any, context: dict[str, Any] | None, query: str, limit: int | None = None) -> list[Hit]:
    """The best matches for `query` among the objects the user may see, best first; [] means no good match."""
    limit = max(0, min(int(limit if limit is not None else source.limit), MAX_LIMIT))
    terms = query_terms(query, source.stopwords)
    if not terms or limit == 0:
        return []
    qs = scoped(source, user, context)
    backend = backend_for(source, qs.db)
    if backend is None:
        return []
    # the scope as SQL: one column, the pk as text, as the index keeps it
    sql, params = qs.order_by().annotate(_pagechat_pk=Cast("pk", models.TextField())).values("_pagechat_pk").query.sql_with_params()
    ranked = backend.search(connections[qs.db], source.name, terms, sql, params)
    total = qs.count() if ranked else 0  # the scope's own size, for IDF only; never reported
    keep = relevant(ranked, terms, total, coverage_power=backend.coverage_power)[:limit]
    # read back through the scope again: an object deleted or moved out of scope since it was indexed never shows
    objs = {str(o.pk): o for o in qs.filter(pk__in=[pk for pk, _, _ in keep])}
    return [Hit(source=source.name, pk=pk, title=source.title_of(o), url=source.url_of(o), snippet=source.snippet_of(o), obj=o)
            for pk, _, _ in keep if (o := objs.get(pk)) is not None]
