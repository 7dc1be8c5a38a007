"""Staff settings read on every turn (tool overrides, group restrictions, MCP servers), cached per process.

A turn used to read them with a query each; now a process reads each at most once per
CHAT_STAFF_SETTINGS_TTL seconds. A change saved through the ORM or the admin in this process clears the cache at
once (the apps connect `clear` to their models' signals); other processes see it within the TTL. 0 turns caching off.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from chat.conf import chat_settings

_lock = threading.Lock()
_values: dict[str, tuple[float, Any]] = {}  # key -> (read at, value)
_generation = 0  # bumped by clear(): a read that began before a change must not store its stale value


def staff_setting[T](key: str, load: Callable[[], T]) -> T:
    """The cached value of `key`, loaded with `load()` (a database read) when missing or older than the TTL."""
    ttl = chat_settings.CHAT_STAFF_SETTINGS_TTL
    now = time.monotonic()
    with _lock:
        found = _values.get(key)
        generation = _generation
    if found is not None and now - found[0] < ttl:
        return found[1]
    value = load()
    if ttl > 0:
        with _lock:
            if generation == _generation:
                _values[key] = (now, value)
    return value


def clear(*args: Any, **kwargs: Any) -> None:
    """Forget every cached value (a signal receiver: any arguments)."""
    global _generation
    with _lock:
        _values.clear()
        _generation += 1


def clear_on_change(*models: type[Any], m2m: tuple[type[Any], ...] = ()) -> None:
    """Clear the cache whenever one of `models` is saved or deleted, or one of the `m2m` through tables changes."""
    from django.db.models.signals import m2m_changed, post_delete, post_save

    for model in models:
        post_save.connect(clear, sender=model, dispatch_uid=f"pagechat-staff-save-{model._meta.label}")
        post_delete.connect(clear, sender=model, dispatch_uid=f"pagechat-staff-delete-{model._meta.label}")
    for through in m2m:
        m2m_changed.connect(clear, sender=through, dispatch_uid=f"pagechat-staff-m2m-{through._meta.label}")
