"""Per-user limits: messages per minute and open sockets (in process, or shared through Redis)."""
from __future__ import annotations

import time
from collections import defaultdict, deque

from django.conf import settings


class Limiter:
    """Sliding-window message rate and socket counts; Redis-backed when REDIS_URL is set."""

    def __init__(self) -> None:
        self._sends: dict[int, deque[float]] = defaultdict(deque)
        self._sockets: dict[int, int] = defaultdict(int)
        self._redis = None
        self._redis_loop = None

    def _client(self):  # type: ignore[no-untyped-def]
        import asyncio

        if not settings.REDIS_URL:
            return None
        loop = asyncio.get_running_loop()
        if self._redis is None or self._redis_loop is not loop:
            import redis.asyncio as aioredis

            self._redis, self._redis_loop = aioredis.from_url(settings.REDIS_URL, decode_responses=True), loop
        return self._redis

    async def check_message(self, user_id: int) -> None:
        """Count one message; raise RateLimited past CHAT_RATE_LIMIT_PER_MINUTE."""
        from chat.services import RateLimited

        limit = settings.CHAT_RATE_LIMIT_PER_MINUTE
        r = self._client()
        if r is not None:
            key = f"chat:rate:{user_id}:{int(time.time() // 60)}"
            pipe = r.pipeline(transaction=False)
            pipe.incr(key)
            pipe.expire(key, 120)
            count, _ = await pipe.execute()
            if count > limit:
                raise RateLimited(f"more than {limit} messages a minute")
            return
        now = time.monotonic()
        window = self._sends[user_id]
        while window and now - window[0] > 60:
            window.popleft()
        if len(window) >= limit:
            raise RateLimited(f"more than {limit} messages a minute")
        window.append(now)

    def socket_open(self, user_id: int) -> bool:
        """Count an open socket; False when the user already has the maximum (per process)."""
        if self._sockets[user_id] >= settings.CHAT_MAX_SOCKETS_PER_USER:
            return False
        self._sockets[user_id] += 1
        return True

    def socket_closed(self, user_id: int) -> None:
        self._sockets[user_id] = max(0, self._sockets[user_id] - 1)

    def reset(self) -> None:
        self._sends.clear()
        self._sockets.clear()


limiter = Limiter()
