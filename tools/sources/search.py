"""A source searched as one user: the scope's queryset becomes a condition of the backend's ranked query, the
relevance threshold keeps good matches, and the objects are read back through the same scope."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, models

from tools.sources.index import backend_for, object_key
from tools.sources.ranking import query_terms
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
    connection = connections[qs.db]
    # the scope as SQL: one column, the pk in its own type (the backend casts the index's text to it, so the scope is
    # probed through the primary key, not copied as text on every search)
    try:
        sql, params = qs.order_by().values("pk").query.sql_with_params()
    except EmptyResultSet:  # the scope selects nothing (`.none()`, say, for someone not signed in): nothing to search
        return []
    pk_type = source.model._meta.pk.cast_db_type(connection) or ""
    ranked = backend.search(connection, source.name, terms, sql, params, pk_type=pk_type)
    total = qs.count() if ranked else 0  # the scope's own size, for IDF only; never reported
    keep = backend.relevant(ranked, terms, total)[:limit]
    # read back through the scope again: an object deleted or moved out of scope since it was indexed never shows
    objs = {object_key(source, o.pk, qs.db): o for o in qs.filter(pk__in=[pk for pk, _, _ in keep])}
    return [Hit(source=source.name, pk=pk, title=source.title_of(o), url=source.url_of(o), snippet=source.snippet_of(o), obj=o)
            for pk, _, _ in keep if (o := objs.get(pk)) is not None]
