"""The configured provider (CHAT_PROVIDER), one instance per event loop."""
from __future__ import annotations

import asyncio
import weakref
from typing import cast

from django.utils.module_loading import import_string

from chat.conf import chat_settings
from chat.providers.base import Provider

_providers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Provider]] = weakref.WeakKeyDictionary()


def provider_get() -> Provider:
    """The configured provider, built by its `from_settings(chat_settings)`; one per event loop (HTTP clients are bound to it)."""
    per_loop = _providers.setdefault(asyncio.get_running_loop(), {})
    path = chat_settings.CHAT_PROVIDER
    provider = per_loop.get(path)
    if provider is None:
        cls = cast(type[Provider], import_string(path))
        provider = per_loop[path] = cls.from_settings(chat_settings)
    return provider
