"""Per-user limits: messages per minute and open sockets, shared through Redis when CHAT_REDIS_URL is set.

Refusals raise/return so the transports answer `error{code:"rate_limited"}`. When Redis is
unreachable the limits fall back to this process's own counts (fail open to a per-process limit,
never fail the request because the limiter's store is down)."""
from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from typing import Any

from chat.conf import chat_settings
from chat.errors import RateLimited
from chat.redis_client import LoopClient, redis_errors, redis_key

log = logging.getLogger(__name__)
# An open socket counts in Redis until this long after its process last refreshed it (a dead process's
# sockets stop counting by themselves); refreshed on every heartbeat.
SOCKET_LEASE = 60

# KEYS[1] zset of socket ids scored by lease expiry; ARGV: now, expiry, limit, socket id, key ttl.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[4]) then return 1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[5]))
return 1
"""


class Limiter:
    """Sliding-window message rate and socket counts; Redis-backed when CHAT_REDIS_URL is set."""

    def __init__(self) -> None:
        self._sends: dict[int, deque[float]] = defaultdict(deque)
        self._sockets: dict[int, set[str]] = defaultdict(set)
        self._acquire: Any = None
        self._redis = LoopClient(on_new=self._register_scripts)

    def _register_scripts(self, client: Any) -> None:
        self._acquire = client.register_script(_ACQUIRE)

    def _client(self) -> Any:
        return self._redis.get()

    # ---- messages --------------------------------------------------------------------------------

    async def check_message(self, user_id: int) -> None:
        """Count one message; raise RateLimited past CHAT_RATE_LIMIT_PER_MINUTE."""
        limit = chat_settings.CHAT_RATE_LIMIT_PER_MINUTE
        r = self._client()
        if r is not None:
            try:
                key = self._rate_key(user_id)
                pipe = r.pipeline(transaction=False)
                pipe.incr(key)
                pipe.expire(key, 120)
                count, _ = await pipe.execute()
            except redis_errors():
                log.warning("rate limiter: Redis unavailable, counting in this process")
            else:
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

    async def uncount_message(self, user_id: int) -> None:
        """Give back the count of a message that started nothing (a resend)."""
        r = self._client()
        if r is not None:
            try:
                await r.decr(self._rate_key(user_id))
                return
            except redis_errors():
                pass
        window = self._sends.get(user_id)
        if window:
            window.pop()

    # ---- sockets ---------------------------------------------------------------------------------

    async def socket_acquire(self, user_id: int, socket_id: str) -> bool:
        """Count an open socket; False when the user already has CHAT_MAX_SOCKETS_PER_USER (across processes)."""
        limit = chat_settings.CHAT_MAX_SOCKETS_PER_USER
        local = self._sockets[user_id]
        if len(local) >= limit:
            return False
        r = self._client()
        if r is not None:
            now = time.time()
            try:
                ok = await self._acquire(keys=[self._socket_key(user_id)], args=[now, now + SOCKET_LEASE, limit, socket_id, SOCKET_LEASE * 2])
            except redis_errors():
                log.warning("socket limiter: Redis unavailable, counting in this process")
            else:
                if not ok:
                    return False
        local.add(socket_id)
        return True

    async def socket_release(self, user_id: int, socket_id: str) -> None:
        self._sockets[user_id].discard(socket_id)
        r = self._client()
        if r is not None:
            try:
                await r.zrem(self._socket_key(user_id), socket_id)
            except redis_errors():
                pass  # its lease runs out by itself

    async def refresh(self) -> None:
        """Extend the leases of this process's open sockets (called on every heartbeat)."""
        r = self._client()
        if r is None or not any(self._sockets.values()):
            return
        expiry = time.time() + SOCKET_LEASE
        try:
            pipe = r.pipeline(transaction=False)
            for user_id, ids in self._sockets.items():
                if ids:
                    pipe.zadd(self._socket_key(user_id), {sid: expiry for sid in ids})
                    pipe.expire(self._socket_key(user_id), SOCKET_LEASE * 2)
            await pipe.execute()
        except redis_errors():
            log.warning("socket limiter: could not refresh leases")

    @staticmethod
    def _rate_key(user_id: int) -> str:
        """The user's message count of the current minute."""
        return redis_key(f"rate:{user_id}:{int(time.time() // 60)}")

    @staticmethod
    def _socket_key(user_id: int) -> str:
        return redis_key(f"sockets:{user_id}")

    def open_sockets(self, user_id: int) -> int:
        """Sockets this process has open for the user."""
        return len(self._sockets[user_id])

    def reset(self) -> None:
        self._sends.clear()
        self._sockets.clear()


limiter = Limiter()
