"""Per-user limits: messages in any 60 seconds and open sockets, shared through Redis when CHAT_REDIS_URL is set.

Refusals raise/return so the transports answer `error{code:"rate_limited"}` (a message refusal with `retry_after`).
When Redis is unreachable the limits fall back to this process's own counts (fail open to a per-process limit,
never fail the request because the limiter's store is down).

The message limit is a sliding window log: the times of the user's accepted messages of the last 60 s (a Redis
sorted set, trimmed and added to by one Lua script, so concurrent processes never both take the last place).
Unlike a counter per calendar minute, which lets twice the limit through around a minute's boundary, no 60 s
window ever holds more than CHAT_RATE_LIMIT_PER_MINUTE messages. The times are the processes' clocks (kept in
step by NTP like any cluster's): a step between them moves the window by as much.
"""
from __future__ import annotations

import logging
import math
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from chat.conf import chat_settings
from chat.events.errors import RateLimited
from chat.infra.logs import Throttled
from chat.infra.redis_client import LoopClient, redis_errors, redis_key

log = logging.getLogger(__name__)
# Redis away is recoverable and every message or heartbeat would say so again: one line a minute each
_rate_redis = Throttled(log)
_socket_redis = Throttled(log)
_lease_redis = Throttled(log)
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
WINDOW_MS = 60_000  # the message limit holds over any window this long
# KEYS[1] zset of the user's counted messages (member: its ticket) scored by their time in ms; ARGV: now (ms), window
# (ms), limit, ticket. Returns 0 when counted, else the ms until a place frees (when the entry whose leaving makes room
# leaves the window).
_COUNT = """
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local freeing = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
  return math.max(1, tonumber(freeing[2]) + window - now)
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return 0
"""


class Limiter:
    """Sliding-window message rate and socket counts; Redis-backed when CHAT_REDIS_URL is set.

    `clock`: wall-clock seconds (time.time), the message window's time; tests pass their own to move it."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._sends: dict[int, deque[tuple[int, str]]] = defaultdict(deque)  # (ms, ticket) of the Redis-less window
        self._sockets: dict[int, set[str]] = defaultdict(set)
        self._acquire: Any = None
        self._count: Any = None
        self._redis = LoopClient(on_new=self._register_scripts)

    def _register_scripts(self, client: Any) -> None:
        self._acquire = client.register_script(_ACQUIRE)
        self._count = client.register_script(_COUNT)

    def _client(self) -> Any:
        return self._redis.get()

    # ---- messages --------------------------------------------------------------------------------

    async def check_message(self, user_id: int) -> str:
        """Count one message; RateLimited (with `retry_after`, seconds) when the user's last 60 s already hold
        CHAT_RATE_LIMIT_PER_MINUTE. Returns the message's ticket, for uncount_message."""
        limit = chat_settings.CHAT_RATE_LIMIT_PER_MINUTE
        now = int(self._clock() * 1000)
        ticket = uuid.uuid4().hex
        r = self._client()
        if r is not None:
            try:
                wait_ms = int(await self._count(keys=[self._rate_key(user_id)], args=[now, WINDOW_MS, limit, ticket]))
            except redis_errors() as exc:
                _rate_redis.warning("rate limiter: Redis unavailable, counting in this process", exc=exc)
            else:
                _rate_redis.recovered("rate limiter: Redis is back")
                if wait_ms:
                    raise self._refusal(limit, wait_ms)
                return ticket
        window = self._sends[user_id]
        while window and window[0][0] <= now - WINDOW_MS:
            window.popleft()
        if len(window) >= limit:
            raise self._refusal(limit, window[len(window) - limit][0] + WINDOW_MS - now)
        window.append((now, ticket))
        return ticket

    @staticmethod
    def _refusal(limit: int, wait_ms: int) -> RateLimited:
        # within 1 s..60 s: a message counted by a call that read the clock later may sort after `now`
        return RateLimited(f"more than {limit} messages a minute", retry_after=math.ceil(min(max(wait_ms, 1), WINDOW_MS) / 1000))

    async def uncount_message(self, user_id: int, ticket: str) -> None:
        """Give back the count of a message that started nothing (a resend): its place in the window is free again."""
        r = self._client()
        if r is not None:
            try:
                await r.zrem(self._rate_key(user_id), ticket)
            except redis_errors():
                pass  # counted here if Redis was away when it was counted: removed below
        window = self._sends.get(user_id)
        if window:
            for entry in window:
                if entry[1] == ticket:
                    window.remove(entry)
                    break

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
            except redis_errors() as exc:
                _socket_redis.warning("socket limiter: Redis unavailable, counting in this process", exc=exc)
            else:
                _socket_redis.recovered("socket limiter: Redis is back")
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
        except redis_errors() as exc:
            _lease_redis.warning("socket limiter: could not refresh leases", exc=exc)
        else:
            _lease_redis.recovered("socket limiter: leases refreshed again")

    @staticmethod
    def _rate_key(user_id: int) -> str:
        """The user's messages of the last 60 s (a sorted set of tickets scored by time)."""
        return redis_key(f"rate:{user_id}")

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
