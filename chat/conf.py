"""Every setting the chat engine reads, with its default, behind one object: `chat_settings`.

A host project sets none of them to start: each `CHAT_*` has its default here. Values are read from
Django's settings on first use and cached until a setting changes (`override_settings` and tests'
`settings` fixture send `setting_changed`), so reading one on a hot path is a plain attribute lookup.
Wrong values are reported by `manage.py check` (chat/checks.py), not at run time.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast, get_args, get_type_hints

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

# Short names CHAT_PROVIDER may use instead of a dotted path.
PROVIDER_ALIASES: dict[str, str] = {
    "anthropic": "chat.providers.anthropic.AnthropicProvider",
    "openai": "chat.providers.openai.OpenAIProvider",
    "offline": "chat.providers.offline.OfflineProvider",
    "scripted": "chat.providers.scripted.ScriptedProvider",
}
# USD per million tokens by model name or fnmatch pattern (CHAT_PRICES' default); cache prices default to `input`.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "offline": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0},
    "claude-opus-*": {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_write": 18.75},
    "claude-sonnet-*": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "claude-haiku-*": {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_write": 1.25},
}
RUN_LOG_BACKENDS: dict[str, str] = {
    "memory": "chat.runs.log.MemoryRunLog",
    "redis": "chat.runs.log.RedisRunLog",
}


@dataclass(frozen=True)
class Setting:
    """One setting: its default (or a function of the other settings), what it means, its lower bound."""

    default: Any
    help: str
    minimum: float | None = 0
    positive: bool = False  # zero is not allowed either
    derived: Callable[[ChatSettings, Any], Any] | None = None  # maps the raw value (or None) to the value used
    name: str = ""
    kind: Any = None  # the annotation on ChatSettings, filled in below

    @property
    def cast(self) -> type:
        """The type a value from the environment is parsed as (the annotation without None)."""
        kinds = [k for k in (get_args(self.kind) or (self.kind,)) if k is not type(None)]
        return cast(type, kinds[0])

    def __set_name__(self, owner: type, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __get__(self, instance: ChatSettings | None, owner: type) -> Any:
        if instance is None:
            return self
        raw = getattr(django_settings, self.name, None)
        value = self.derived(instance, raw) if self.derived is not None else (self.default if raw is None else raw)
        instance.__dict__[self.name] = value  # later reads skip this descriptor (it defines no __set__)
        return value


def setting(default: Any, help: str, *, minimum: float | None = 0, positive: bool = False,
            derived: Callable[[ChatSettings, Any], Any] | None = None) -> Any:
    """Declare a setting on ChatSettings (typed as its annotation for readers and mypy)."""
    return Setting(default, help, minimum=minimum, positive=positive, derived=derived)


def _provider(conf: ChatSettings, raw: Any) -> Any:
    if raw is None or raw == "":
        key = getattr(django_settings, "ANTHROPIC_API_KEY", None) or os.environ.get("ANTHROPIC_API_KEY")
        raw = "anthropic" if key else "offline"
    return PROVIDER_ALIASES.get(raw, raw) if isinstance(raw, str) else raw


def _redis_url(conf: ChatSettings, raw: Any) -> Any:
    if raw is None:
        return getattr(django_settings, "REDIS_URL", None) or ""
    return raw


def _run_log_backend(conf: ChatSettings, raw: Any) -> Any:
    if raw is None or raw == "":
        raw = "redis" if conf.CHAT_REDIS_URL else "memory"
    return RUN_LOG_BACKENDS.get(raw, raw) if isinstance(raw, str) else raw


def _optional_str(conf: ChatSettings, raw: Any) -> Any:
    return raw or None


class ChatSettings:
    """Attribute access to the engine's settings: `chat_settings.CHAT_MODEL`; other names fall through to Django's."""

    # ---- the model ----
    CHAT_PROVIDER: str = setting(
        None, "`anthropic`, `openai`, `offline`, `scripted` or a dotted path to a Provider subclass; default `anthropic` "
        "when ANTHROPIC_API_KEY is set, else `offline`", derived=_provider)
    CHAT_MODEL: str = setting("claude-sonnet-5", "model name sent to the provider")
    CHAT_MAX_TOKENS: int = setting(2000, "max output tokens per model call", positive=True)
    CHAT_MAX_ITERATIONS: int = setting(5, "model calls per turn (tool rounds + 1)", positive=True)
    CHAT_TEMPERATURE: float = setting(0.0, "sampling temperature")
    CHAT_HISTORY_TOKEN_BUDGET: int = setting(60000, "tokens of stored history sent with a turn", positive=True)
    CHAT_PROVIDER_MAX_RETRIES: int = setting(3, "retries of a failed model call")
    CHAT_PROVIDER_TIMEOUT: float = setting(60.0, "seconds for a model call's HTTP request", positive=True)
    CHAT_PROVIDER_STALL_TIMEOUT: float = setting(30.0, "seconds without data before a stream counts as stalled", positive=True)
    CHAT_OFFLINE_DELAY: float = setting(0.02, "seconds between the offline model's chunks")
    ANTHROPIC_API_KEY: str = setting("", "the Anthropic key (else the SDK reads the environment)")
    ANTHROPIC_BASE_URL: str | None = setting(
        None, "any Anthropic-compatible server (Ollama, vLLM, llama.cpp); None: Anthropic's", derived=_optional_str)
    OPENAI_API_KEY: str = setting("", "the key of an OpenAI-compatible server (else the SDK reads the environment)")
    OPENAI_BASE_URL: str | None = setting(
        None, "any OpenAI-compatible server with its /v1 (vLLM, Ollama, llama.cpp, LM Studio, LiteLLM); None: OpenAI's",
        derived=_optional_str)
    CHAT_OPENAI_SEND_DOCUMENTS: bool = setting(
        False, "send PDFs to an OpenAI-compatible server as `file` content parts (OpenAI takes them; most local servers do not)")
    CHAT_PROMPT_CACHING: bool = setting(
        True, "Anthropic prompt caching: cache breakpoints on the tools, the system prompt and the history prefix")
    # ---- cost and budgets ----
    CHAT_PRICES: dict = setting(
        DEFAULT_PRICES, "USD per million tokens by model name or pattern: {model: {input, output, cache_read, cache_write}}; "
        "a model without a price has no cost (shown as unknown, never as free)")
    CHAT_DAILY_TOKEN_BUDGET: int = setting(0, "tokens (cache reads and writes included) a user may use per UTC day; 0: no budget")
    CHAT_DAILY_COST_BUDGET: float = setting(0.0, "US dollars a user's turns may cost per UTC day (CHAT_PRICES); 0: no budget")
    # ---- streaming and persistence ----
    CHAT_COALESCE_WINDOW: float = setting(0.03, "seconds text deltas are gathered into one event")
    CHAT_FLUSH_INTERVAL: float = setting(0.25, "seconds after the first text before streamed text is saved")
    CHAT_FLUSH_MAX_INTERVAL: float = setting(
        1.5, "the save window doubles up to this many seconds (the most text a crash can take from the saved message)")
    # ---- runs across processes ----
    CHAT_REDIS_URL: str = setting(
        "", "Redis for the run log and the shared limits; default: the project's REDIS_URL, else none", derived=_redis_url)
    CHAT_REDIS_KEY_PREFIX: str = setting(
        "chat:", "prefix of every Redis key pagechat writes (run logs, limits, budgets); give each site sharing a Redis its own")
    CHAT_RUN_LOG_BACKEND: str = setting(
        None, "`memory`, `redis` or a dotted path to a RunLog subclass; default `redis` when CHAT_REDIS_URL is set",
        derived=_run_log_backend)
    CHAT_RUN_LOG_TTL: float = setting(3600, "seconds a finished run stays replayable", positive=True)
    CHAT_RUN_MEMORY_MAX_EVENTS: int = setting(
        50_000, "events of one run held in its process's memory; older ones are released (a lagging follower resyncs)", positive=True)
    CHAT_RUN_MEMORY_MAX_BYTES: int = setting(
        16 * 1024 * 1024, "characters of one run's events held in memory (as above)", positive=True)
    CHAT_PROCESS_MEMORY_MAX_BYTES: int = setting(
        256 * 1024 * 1024, "characters of all runs' events a process holds; finished runs are let go first, oldest first",
        positive=True)
    CHAT_HEARTBEAT_INTERVAL: float = setting(2.0, "seconds between an owner's heartbeats", positive=True)
    CHAT_STALE_AFTER: float = setting(8.0, "seconds without a heartbeat before a run is swept as interrupted", positive=True)
    CHAT_GRACEFUL_SHUTDOWN: bool = setting(True, "on SIGTERM, let running runs finish before the server stops")
    CHAT_SHUTDOWN_TIMEOUT: float = setting(10.0, "seconds SIGTERM waits for running runs")
    CHAT_CLIENT_TOOL_TIMEOUT: float = setting(30.0, "seconds a run waits for the tab to answer a frontend tool call "
                                              "(`client_tool_call`); then the model is told the page did not answer", positive=True)
    # ---- limits ----
    CHAT_MAX_FRAME_BYTES: int = setting(64 * 1024, "largest client frame or request body", positive=True)
    CHAT_MAX_MESSAGE_CHARS: int = setting(16000, "longest user message", positive=True)
    CHAT_MAX_ATTACHMENT_BYTES: int = setting(
        5 * 1024 * 1024, "largest attachment (image or PDF) in bytes; 5 MB is the Anthropic API's own limit per image",
        positive=True)
    CHAT_MAX_IMAGE_DECODE_BYTES: int = setting(
        128 * 1024 * 1024, "memory reading one image attachment may take: 8 bytes a pixel in colour (2 greyscale or palette, 24 "
        "for a WebP); a larger image is `too_large` before it is decoded (the default takes a 16-megapixel photo, a 5.6-megapixel "
        "WebP). A process reads one image at a time, the others wait (docs/hardening.md)", positive=True)
    CHAT_MAX_ATTACHMENTS_PER_MESSAGE: int = setting(5, "attachments one message may carry", positive=True)
    CHAT_UNSENT_ATTACHMENT_HOURS: float = setting(
        24.0, "hours an uploaded attachment may wait for a message before `chat_purge` removes it", positive=True)
    CHAT_MAX_CLIENT_BODY_BYTES: int = setting(
        2 * 1024 * 1024, "largest AG-UI / AI SDK request body (those clients re-send the whole history each time)", positive=True)
    CHAT_RATE_LIMIT_PER_MINUTE: int = setting(30, "messages per user in any 60 seconds (a sliding window, shared through Redis)", positive=True)
    CHAT_MAX_SOCKETS_PER_USER: int = setting(20, "open websockets per user", positive=True)
    CHAT_MAX_RUNNING_PER_USER: int = setting(4, "runs in progress per user", positive=True)
    CHAT_ACTION_TOKEN_MAX_AGE: int = setting(3600, "seconds a server-action button stays valid", positive=True)
    CHAT_AUTH_RECHECK_INTERVAL: float = setting(
        3.0, "seconds between an open socket's checks that its token, session and user are still valid", positive=True)
    CHAT_STAFF_SETTINGS_TTL: float = setting(
        5.0, "seconds a process reuses staff's tool, group and MCP settings (changes made in this process apply at once; 0: read every turn)")
    # ---- the web tools (tools/builtin/web.py) ----
    CHAT_TOOL_THREADS: int = setting(
        16, "threads blocking tools and server actions run in (a slow tool never holds up other users' database access)", positive=True)
    CHAT_FETCH_TIMEOUT: float = setting(10.0, "seconds fetch_webpage waits for a page (connect, each read, and in all)", positive=True)
    CHAT_FETCH_MAX_BYTES: int = setting(2_000_000, "bytes of a page fetch_webpage reads at most (the rest is not downloaded)", positive=True)
    CHAT_FETCH_MAX_CHARS: int = setting(20_000, "characters of a page's text fetch_webpage gives the model", positive=True)
    CHAT_FETCH_MAX_REDIRECTS: int = setting(5, "redirects fetch_webpage follows (each target is checked again)")
    CHAT_FETCH_ALLOWED_NETWORKS: str = setting(
        "", "comma-separated networks (CIDR) fetch_webpage may reach although they are private, loopback or "
        "link-local, e.g. `10.1.0.0/16`; default: none (only public addresses)")
    CHAT_WEB_SEARCH_BACKEND: str = setting(
        "", "dotted path to the web_search tool's backend (a callable `(query, limit, ctx) -> WebSearchResults`); "
        "default: none (the tool says web search is not configured)")
    # ---- sources' embedding backend (docs/sources.md) ----
    CHAT_EMBEDDER: str = setting(
        "hashing", "what turns text into vectors for the embedding source backend: `hashing` (local feature hashing of "
        "words and trigrams: lexical, not semantic), `openai` (an OpenAI-compatible embeddings API, CHAT_EMBEDDINGS_*) "
        "or a dotted path to an Embedder class")
    CHAT_EMBEDDINGS_URL: str = setting(
        "", "base URL of the OpenAI-compatible embeddings API with its /v1 (requests go to `<url>/embeddings`); empty: OpenAI's")
    CHAT_EMBEDDINGS_MODEL: str = setting("text-embedding-3-small", "the embeddings model asked for")
    CHAT_EMBEDDINGS_API_KEY: str = setting("", "bearer key of the embeddings API (sent in the Authorization header only, never logged); empty: none")
    CHAT_EMBEDDINGS_DIMENSIONS: int = setting(
        0, "vector size asked of the embeddings API (sent as `dimensions`, for models that can shorten theirs); 0: the model's own")
    CHAT_EMBEDDINGS_TIMEOUT: float = setting(30.0, "seconds an embeddings request may take", positive=True)
    CHAT_EMBEDDINGS_MIN_SIMILARITY: float | None = setting(
        None, "cosine similarity below which an embedding match is no good match; None: the embedder's own (hashing 0.28, openai 0.3)",
        minimum=None)
    # ---- MCP tool servers (tools/mcp.py) ----
    CHAT_MCP_ALLOWED_NETWORKS: str = setting(
        "", "comma-separated networks (CIDR) an MCP server over HTTP may be at although they are private, loopback or "
        "link-local, e.g. `10.1.0.0/16` or `127.0.0.1/32` for one on this machine; default: none (only public addresses: "
        "the admin refuses any other URL and a call never connects to one, docs/mcp.md)")
    # ---- operations ----
    CHAT_METRICS_TOKEN: str = setting("", "bearer token that may read /metrics (staff always may); empty: staff only")
    CHAT_GC_FREEZE: bool = setting(
        True, "move the objects loaded at startup out of the garbage collector's reach when `websocket_application()` "
        "builds the app: a full collection then scans only what the process made since (it paused the event loop "
        "100-150 ms with a loaded Django process, 17 ms after)")
    CHAT_TRACE_CONTENT: bool = setting(
        False, "put message text and tool inputs/outputs on trace spans (gen_ai.input/output.messages); off: never")
    # ---- your users' data ----
    CHAT_RETENTION_DAYS: float | None = setting(
        None, "days a conversation is kept after its last activity; `manage.py chat_purge` removes older ones. None: keep forever")
    # ---- evals (docs/evals.md) ----
    CHAT_EVAL_JUDGE_PROVIDER: str = setting(
        "", "the provider that grades the eval cases with a `judge` (`manage.py chat_eval`): a CHAT_PROVIDER name or dotted "
        "path; empty: judged cases are skipped")
    CHAT_EVAL_JUDGE_MODEL: str = setting("", "the model the eval judge is asked for; empty: CHAT_MODEL")

    def __getattr__(self, name: str) -> Any:
        """Anything that is not an engine setting is Django's (custom providers read their own settings here)."""
        return getattr(django_settings, name)

    def reload(self) -> None:
        """Forget the cached values (a setting changed)."""
        self.__dict__.clear()

    @classmethod
    def specs(cls) -> dict[str, Setting]:
        """Every engine setting by name, in the order above."""
        return {name: value for name, value in vars(cls).items() if isinstance(value, Setting)}


_hints = get_type_hints(ChatSettings)
for _name, _spec in ChatSettings.specs().items():
    object.__setattr__(_spec, "kind", _hints[_name])

# Settings whose change can change a value above besides their own.
_INPUTS = frozenset(ChatSettings.specs()) | {"REDIS_URL"}

chat_settings = ChatSettings()


@receiver(setting_changed)
def _setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in _INPUTS:
        chat_settings.reload()
