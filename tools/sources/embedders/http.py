"""An OpenAI-compatible embeddings API (`POST <CHAT_EMBEDDINGS_URL>/embeddings`: OpenAI, vLLM, Ollama, LiteLLM, ...).
The key travels in the Authorization header only: no error message or log line carries it."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from tools.sources.embedders.base import Embedder, EmbeddingError, normalised

BATCH = 64  # texts per request
DEFAULT_URL = "https://api.openai.com/v1"


class HttpEmbedder(Embedder):
    min_similarity = 0.3

    def __init__(self, *, url: str = DEFAULT_URL, model: str, key: str = "", dimensions: int = 0, timeout: float = 30.0) -> None:
        self.url = (url or DEFAULT_URL).rstrip("/") + "/embeddings"
        self.model = model
        self._key = key
        self._dimensions = int(dimensions)  # 0: the model's own size, learned from one request
        self.timeout = timeout
        self.name = f"{model}@{self._dimensions or 'native'}"

    @classmethod
    def from_settings(cls) -> HttpEmbedder:
        from chat.conf import chat_settings as s

        return cls(url=s.CHAT_EMBEDDINGS_URL, model=s.CHAT_EMBEDDINGS_MODEL, key=s.CHAT_EMBEDDINGS_API_KEY,
                   dimensions=s.CHAT_EMBEDDINGS_DIMENSIONS, timeout=s.CHAT_EMBEDDINGS_TIMEOUT)

    def __repr__(self) -> str:  # never the key
        return f"HttpEmbedder(url={self._where()!r}, model={self.model!r})"

    @property
    def dimensions(self) -> int:
        if not self._dimensions:
            self._dimensions = len(self.embed(["dimensions"])[0])
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            out.extend(self._request(list(texts[start:start + BATCH])))
        return out

    def _request(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": [t or " " for t in texts], "encoding_format": "float"}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise EmbeddingError(f"embeddings request to {self._where()} failed: HTTP {exc.code} {_error_code(exc.read(4096))}".strip()) from None
        except (OSError, ValueError) as exc:
            raise EmbeddingError(f"embeddings request to {self._where()} failed: {self._redacted(str(exc))}") from None
        try:
            rows = sorted(answer["data"], key=lambda row: row.get("index", 0))
            vectors = [normalised([float(x) for x in row["embedding"]]) for row in rows]
        except (KeyError, TypeError, ValueError):
            raise EmbeddingError(f"embeddings response from {self._where()} has no data[].embedding") from None
        if len(vectors) != len(texts):
            raise EmbeddingError(f"embeddings response from {self._where()}: {len(vectors)} vectors for {len(texts)} texts")
        if self._dimensions and any(len(v) != self._dimensions for v in vectors):
            raise EmbeddingError(f"embeddings from {self._where()} are not of CHAT_EMBEDDINGS_DIMENSIONS={self._dimensions}")
        return vectors

    def _where(self) -> str:
        """The URL without any credentials in it."""
        parts = urllib.parse.urlsplit(self.url)
        return urllib.parse.urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", "")) if not parts.port else \
            urllib.parse.urlunsplit((parts.scheme, f"{parts.hostname}:{parts.port}", parts.path, "", ""))

    def _redacted(self, text: str) -> str:
        """`text` without the key (an error of the HTTP library may quote a header)."""
        return text.replace(self._key, "[key]") if self._key else text


def _error_code(body: bytes) -> str:
    """The error's short code or type from an OpenAI-style error body; never its message (servers quote keys in it)."""
    try:
        error = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return ""
    code = error.get("code") or error.get("type") if isinstance(error, dict) else None
    return str(code) if isinstance(code, str) and code.replace("_", "").isalnum() and len(code) <= 40 else ""
