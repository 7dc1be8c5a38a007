"""A local embedder that needs no model: feature hashing of normalised words and their character trigrams into a
fixed number of dimensions (512, signed, L2-normalised). It is LEXICAL, not semantic: texts are near when they share words
or word fragments ("delivering" ~ "delivery"), never because they mean the same with other words. Deterministic and
offline: the tests use it, and a site without an embeddings API can."""
from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

from tools.sources.embedders.base import Embedder, normalised
from tools.sources.ranking import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")
WORD_WEIGHT = 1.0
GRAM_WEIGHT = 0.35  # all of a word's trigrams together weigh this share of the word (fragments: a weaker kind of match)


def words(text: str) -> list[str]:
    """Lower-cased ASCII words without accents, stopwords and 1-character tokens (a hyphenated word gives its parts)."""
    plain = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode().lower()
    return [w for w in _WORD.findall(plain) if len(w) > 1 and w not in STOPWORDS]


class HashingEmbedder(Embedder):
    name = "hashing-v1"
    # measured on the demo corpus (tests/tools/test_sources_embedding.py): at 0.28 the three queries with no good match
    # get nothing and 97% of what is returned is on topic; lower lets word-fragment and hash collisions through
    min_similarity = 0.28
    size = 512  # at 256 dimensions collisions of unrelated words made "pizza in Naples" match lung cancer

    @property
    def dimensions(self) -> int:
        return self.size

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.one(text) for text in texts]

    def one(self, text: str) -> list[float]:
        vector = [0.0] * self.size
        for word in words(text):
            self._add(vector, "w:" + word, WORD_WEIGHT)
            padded = f"<{word}>"
            grams = [padded[i:i + 3] for i in range(len(padded) - 2)]
            for gram in grams:
                self._add(vector, "g:" + gram, GRAM_WEIGHT / len(grams))
        return normalised(vector)

    def _add(self, vector: list[float], feature: str, weight: float) -> None:
        digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
        # the sign bit halves what collisions add up to: two features sharing a slot cancel as often as they add
        vector[digest % self.size] += weight if (digest >> 63) & 1 else -weight
