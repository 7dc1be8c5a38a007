"""System checks for sources: a scoping hook exists and is callable, the model and fields exist, names are unique,
the backend imports and suits the database."""
from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db import connections, models
from django.utils.module_loading import import_string

from tools.sources.backends import default_path
from tools.sources.backends.base import SearchBackend
from tools.sources.spec import WEIGHTS

SCOPE_HINT = ("Give the source scope=lambda user, context: Model.objects.filter(owner=user) (or .all() for objects every "
              "signed-in user may read): the search runs only over what it returns.")


def source_problems(sources: Any) -> list[checks.CheckMessage]:
    """Problems of the given source registry (tests pass their own instance)."""
    errors: list[checks.CheckMessage] = []
    vendor = connections["default"].vendor
    for source in sources:
        where = f"source {source.name!r} ({sources.origin(source.name)})"
        if source.scope is None or not callable(source.scope):
            errors.append(checks.Error(f"{where} has no scoping hook", hint=SCOPE_HINT, id="tools.E020"))
        if not (isinstance(source.model, type) and issubclass(source.model, models.Model)):
            errors.append(checks.Error(f"{where}: model must be a Django model class", id="tools.E021"))
            continue
        if not source.fields:
            errors.append(checks.Error(f"{where} searches no fields", id="tools.E022"))
        for name, weight in source.field_weights.items():
            try:
                source.model._meta.get_field(name)
            except FieldDoesNotExist:
                errors.append(checks.Error(f"{where}: {source.model.__name__} has no field {name!r}", id="tools.E022"))
            if weight not in WEIGHTS:
                errors.append(checks.Error(f"{where}: field {name!r} has weight {weight!r}", hint="Weights are A, B, C or D.", id="tools.E022"))
        path = source.backend or default_path(vendor)
        if not path:
            errors.append(checks.Error(f"{where}: no search backend for the {vendor} database",
                                       hint="Name one by dotted path in Source(backend=...).", id="tools.E024"))
            continue
        try:
            backend = import_string(path)
        except ImportError as exc:
            errors.append(checks.Error(f"{where}: backend {path!r} does not import: {exc}", id="tools.E024"))
            continue
        if not (isinstance(backend, type) and issubclass(backend, SearchBackend)):
            errors.append(checks.Error(f"{where}: backend {path!r} is not a SearchBackend subclass", id="tools.E024"))
        elif backend.vendor and backend.vendor != vendor:
            errors.append(checks.Error(f"{where}: backend {path!r} runs on {backend.vendor}, the database is {vendor}", id="tools.E024"))
        elif getattr(backend, "uses_embedder", False):
            errors.extend(embedder_problems(where))
    for dup in sources.duplicates:
        errors.append(checks.Error(f"source {dup.name!r} is registered twice: in {dup.first} and in {dup.second} (the second is ignored)",
                                   hint="Source names are global: rename one of them.", id="tools.E023"))
    return errors


def embedder_problems(where: str) -> list[checks.CheckMessage]:
    """CHAT_EMBEDDER, for a source whose backend embeds: it imports and is an Embedder (tools.E025)."""
    from chat.conf import chat_settings
    from tools.sources.embedders import embedder_path
    from tools.sources.embedders.base import Embedder

    path = embedder_path(chat_settings.CHAT_EMBEDDER)
    try:
        embedder = import_string(path)
    except ImportError as exc:
        return [checks.Error(f"{where}: CHAT_EMBEDDER {path!r} does not import: {exc}", id="tools.E025")]
    if not (isinstance(embedder, type) and issubclass(embedder, Embedder)):
        return [checks.Error(f"{where}: CHAT_EMBEDDER {path!r} is not an Embedder subclass", id="tools.E025")]
    return []


@checks.register()
def check_sources(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from tools.sources.registry import registry

    return source_problems(registry)
