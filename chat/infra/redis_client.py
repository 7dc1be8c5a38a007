"""One asyncio Redis client for CHAT_REDIS_URL per event loop, shared by the limiter and the budgets.

An asyncio Redis client is bound to the loop it was made on (its connections belong to that loop), so a
holder keeps one per loop: a new loop (a test's, a worker's) gets a new client.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from chat.conf import chat_settings


def redis_key(name: str) -> str:
    """`name` under this site's CHAT_REDIS_KEY_PREFIX: every key pagechat writes goes through here (or the run log's prefix)."""
    return f"{chat_settings.CHAT_REDIS_KEY_PREFIX}{name}"


def redis_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean "Redis is unavailable" (callers fall back instead of failing the request)."""
    import redis.exceptions as rexc

    return (rexc.RedisError, ConnectionError, OSError, asyncio.TimeoutError)


# channels-redis's receive blocks in BZPOPMIN for its brpop_timeout (5 s) and then asks again. redis-py's default
# socket timeout is 5 s too, so an idle receive may end on the client's clock first: a TimeoutError, a dropped
# connection and a reconnect every 5 s. A socket timeout well above the wait lets every idle wait end on the server's
# answer (nothing); a Redis that stops answering is still noticed, 15 s later.
CHANNEL_LAYER_SOCKET_TIMEOUT = 15.0


def channel_layer_host(url: str) -> dict[str, Any]:
    """A channels-redis `hosts` entry for `url` whose idle receives end normally (see CHANNEL_LAYER_SOCKET_TIMEOUT):
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                  "CONFIG": {"hosts": [channel_layer_host(REDIS_URL)]}}}"""
    return {"address": url, "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT}


def receive_timed_out(exc: BaseException) -> bool:
    """Whether a channel layer's receive ended on the client's socket timeout: with a layer configured without
    channel_layer_host, the normal end of an idle wait (no message yet), not a failure."""
    import redis.exceptions as rexc

    return isinstance(exc, rexc.TimeoutError)


class LoopClient:
    """Holds the client for the running loop; `get()` is None without CHAT_REDIS_URL."""

    def __init__(self, on_new: Callable[[Any], None] | None = None) -> None:
        self._redis: Any = None
        self._loop: Any = None
        self._on_new = on_new  # e.g. registering Lua scripts on each new client

    def get(self) -> Any:
        """The client for the running loop, made on first use in that loop; None when Redis is not configured."""
        if not chat_settings.CHAT_REDIS_URL:
            return None
        loop = asyncio.get_running_loop()
        if self._redis is None or self._loop is not loop:
            import redis.asyncio as aioredis

            self._redis = aioredis.from_url(chat_settings.CHAT_REDIS_URL, decode_responses=True, socket_connect_timeout=2)
            self._loop = loop
            if self._on_new is not None:
                self._on_new(self._redis)
        return self._redis
