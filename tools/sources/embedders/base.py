"""The contract of an embedder: texts in, one L2-normalised vector of `dimensions` floats per text out."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


class EmbeddingError(RuntimeError):
    """An embedder could not embed (its message never carries a key)."""


class Embedder:
    """Subclass and name it by dotted path in CHAT_EMBEDDER."""

    name = ""  # what the stored vectors were made with: rows of another name are stale (a rebuild replaces them)
    min_similarity = 0.3  # cosine similarity below which a match counts as no good match (CHAT_EMBEDDINGS_MIN_SIMILARITY overrides)

    @classmethod
    def from_settings(cls) -> Any:
        """An instance configured from the CHAT_EMBEDDINGS_* settings."""
        return cls()

    @property
    def dimensions(self) -> int:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; an empty text gives the zero vector."""
        raise NotImplementedError


def normalised(vector: Sequence[float]) -> list[float]:
    """`vector` scaled to length 1 (the zero vector stays zero)."""
    length = math.sqrt(sum(x * x for x in vector))
    return [x / length for x in vector] if length else [0.0] * len(vector)
