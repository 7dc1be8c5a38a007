"""Embedders turn text into vectors for the embedding backend (tools.sources.backends.embedding), chosen by
CHAT_EMBEDDER: `hashing` (local, lexical), `openai` (an OpenAI-compatible /v1/embeddings endpoint) or a dotted path."""
from __future__ import annotations

from functools import cache

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from tools.sources.embedders.base import Embedder

ALIASES = {
    "hashing": "tools.sources.embedders.hashing.HashingEmbedder",
    "openai": "tools.sources.embedders.http.HttpEmbedder",
}
SETTINGS = frozenset({"CHAT_EMBEDDER", "CHAT_EMBEDDINGS_URL", "CHAT_EMBEDDINGS_MODEL", "CHAT_EMBEDDINGS_API_KEY",
                      "CHAT_EMBEDDINGS_DIMENSIONS", "CHAT_EMBEDDINGS_TIMEOUT", "CHAT_EMBEDDINGS_MIN_SIMILARITY"})


def embedder_path(name: str) -> str:
    """The dotted path CHAT_EMBEDDER names (an alias or a path)."""
    return ALIASES.get(name, name)


@cache
def embedder_get() -> Embedder:
    """The configured embedder (one instance until an embedding setting changes)."""
    from chat.conf import chat_settings

    made = import_string(embedder_path(chat_settings.CHAT_EMBEDDER)).from_settings()
    if not isinstance(made, Embedder):
        raise TypeError(f"CHAT_EMBEDDER {chat_settings.CHAT_EMBEDDER!r} is not an Embedder")
    return made


@receiver(setting_changed)
def _setting_changed(*, setting: str, **kwargs: object) -> None:
    if setting in SETTINGS:
        embedder_get.cache_clear()
