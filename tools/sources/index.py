"""Keeping each source's index current: on save and delete (signals), after migrate (tables created, an empty index
filled), and on demand (`manage.py chat_sources_rebuild`). Objects written without signals (bulk_create, update())
need a rebuild; a stale entry is harmless for scoping, which is applied at search time."""
from __future__ import annotations

import logging
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

from django.db import connections
from django.db.models.signals import post_delete, post_save

from tools.sources.backends import backend_get, default_path
from tools.sources.backends.base import SearchBackend
from tools.sources.embedders.base import EmbeddingError
from tools.sources.spec import Source

log = logging.getLogger(__name__)
BATCH = 1000


def backend_for(source: Source, using: str = "default") -> SearchBackend | None:
    """The source's backend on database `using`: its own dotted path, else the database's default (None: no backend)."""
    path = source.backend or default_path(connections[using].vendor)
    return backend_get(path) if path else None


def object_key(source: Source, pk: Any, using: str = "default") -> str:
    """The text an object is indexed under: its primary key as the database stores it (a UUID is 32 hex digits on
    SQLite), so a search can compare it with the scope in the primary key's own type."""
    return str(source.model._meta.pk.get_db_prep_value(pk, connections[using]))


def _uid(source: Source, kind: str) -> str:
    return f"pagechat-source-{source.name}-{kind}"


def signals_connect(source: Source) -> None:
    """Index an object of the source's model when it is saved, drop it when it is deleted."""
    def saved(sender: Any, instance: Any, using: str = "default", **kwargs: Any) -> None:
        if kwargs.get("raw"):  # loaddata: the fixture's objects are indexed by a rebuild
            return
        try:
            objects_index(source, [instance], using=using)
        except EmbeddingError as exc:
            # The host's save stands when the embeddings service fails (as a search index's outage never loses an
            # edit); the object's old entry goes, so that no stale text of it is searched, and a rebuild indexes it.
            log.warning("source %s: object %s not indexed (%s); manage.py chat_sources_rebuild %s indexes it",
                        source.name, instance.pk, exc, source.name)
            with suppress(EmbeddingError):  # the service must say its vectors' size to find the table: the rebuild will do
                objects_unindex(source, [instance.pk], using=using)

    def deleted(sender: Any, instance: Any, using: str = "default", **kwargs: Any) -> None:
        objects_unindex(source, [instance.pk], using=using)

    post_save.connect(saved, sender=source.model, dispatch_uid=_uid(source, "save"), weak=False)
    post_delete.connect(deleted, sender=source.model, dispatch_uid=_uid(source, "delete"), weak=False)


def signals_disconnect(source: Source) -> None:
    post_save.disconnect(sender=source.model, dispatch_uid=_uid(source, "save"))
    post_delete.disconnect(sender=source.model, dispatch_uid=_uid(source, "delete"))


def objects_unindex(source: Source, pks: Iterable[Any], *, using: str = "default") -> None:
    """Drop these objects' index entries."""
    backend = backend_for(source, using)
    if backend is not None:
        backend.remove(connections[using], source.name, [object_key(source, pk, using) for pk in pks])


def objects_index(source: Source, objects: Iterable[Any], *, using: str = "default") -> None:
    """Insert or replace these objects' index entries."""
    backend = backend_for(source, using)
    if backend is not None:
        backend.index(connections[using], source.name, [(object_key(source, obj.pk, using), source.columns(obj)) for obj in objects])


def source_rebuild(source: Source, *, using: str = "default") -> int:
    """Drop the source's entries and index every object of its model again; returns how many were indexed."""
    backend = backend_for(source, using)
    if backend is None:
        return 0
    connection = connections[using]
    backend.install(connection)
    backend.clear(connection, source.name)
    done, batch = 0, []
    for obj in source.model._default_manager.using(using).order_by("pk").iterator(chunk_size=BATCH):
        batch.append(obj)
        if len(batch) >= BATCH:
            objects_index(source, batch, using=using)
            done, batch = done + len(batch), []
    objects_index(source, batch, using=using)
    backend.rebuilt(connection, source.name)
    return done + len(batch)


def sources_sync(sources: Iterable[Source], *, using: str = "default") -> None:
    """After migrate: every backend's tables exist, and a source whose index is empty while its model has rows is filled."""
    connection = connections[using]
    for source in sources:
        backend = backend_for(source, using)
        if backend is None or backend.vendor != connection.vendor:
            continue
        backend.install(connection)
        try:
            empty = backend.count(connection, source.name) == 0 and source.model._default_manager.using(using).exists()
        except Exception:  # the model's table is not migrated (yet): nothing to index
            log.debug("source %s: model table not ready", source.name, exc_info=True)
            continue
        if empty:
            log.info("source %s: index empty, indexing %d objects", source.name, source_rebuild(source, using=using))
