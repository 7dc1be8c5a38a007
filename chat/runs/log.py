"""Where a run's events outlive the process that owns it: the run-log backends, chosen by CHAT_RUN_LOG_BACKEND.

`MemoryRunLog` (one process: the owner's in-memory handle is the only log) and `RedisRunLog` (a Redis
Stream per run that any process replays and follows). Events are wire frames (JSON text) whose `type`
comes first, so a backend can tell a terminal one by its first bytes.
"""
from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import ClassVar, Literal, cast

import redis.asyncio as aioredis
import redis.exceptions as rexc
from django.utils.module_loading import import_string

from chat.conf import ChatSettings, chat_settings
from chat.events import TERMINAL_TYPES

log = logging.getLogger(__name__)
# A follower blocks this long in XREAD before it checks (in the database) that the run is still alive.
FOLLOW_BLOCK_MS = 2000
# How long a follower waits for Redis to come back before it gives up (the client then resumes).
REDIS_OUTAGE_LIMIT = 30.0
# A resume asking for more than this many events past the end of a live stream is nonsense: resync.
MAX_SEQ_AHEAD = 10_000

RunState = Literal["running", "closed", "gone"]
# settle(run_id, missing_for): the run's state when its log is idle (None) or missing (for that many seconds)
Settle = Callable[[str, float | None], Awaitable[RunState]]


class ResyncRequired(Exception):
    """The events asked for are no longer retained; reload the conversation over REST."""


def is_terminal(data: str) -> bool:
    """True for a complete/error/cancelled frame (its `type` is in the first bytes)."""
    head = data[:24]
    return any(f'"type":"{t}"' in head for t in TERMINAL_TYPES)


class RunLog(ABC):
    """A durable, ordered copy of runs' events that other processes read; seq N is entry N."""

    shared: ClassVar[bool] = True  # False: nothing outside this process reads it (followers use the handle)
    errors: ClassVar[tuple[type[BaseException], ...]] = ()  # what "the store is unreachable" raises

    @classmethod
    def from_settings(cls, conf: ChatSettings) -> RunLog:
        return cls()

    @abstractmethod
    async def append(self, run_id: str, first_seq: int, events: list[str], *, terminal: bool) -> bool:
        """Store events first_seq.. in order (idempotent); False when earlier entries are missing (rewrite it)."""

    @abstractmethod
    async def rewrite(self, run_id: str, events: list[str], *, terminal: bool, first_seq: int = 1) -> None:
        """Replace the run's log by exactly `events`, the first of them with seq `first_seq`."""

    @abstractmethod
    async def close_stream(self, run_id: str, before_seq: str, after_seq: str) -> int:
        """Append `before_seq + <next seq> + after_seq` as the terminal entry: its seq, -1 if no log, 0 if already ended."""

    @abstractmethod
    async def lengths(self, run_ids: list[str]) -> list[int]:
        """How many events each run's log holds."""

    @abstractmethod
    async def request_cancel(self, run_id: str) -> None:
        """Leave a cancel request the owner finds on its heartbeat (if the doorbell is lost)."""

    @abstractmethod
    async def cancel_requested(self, run_ids: list[str]) -> list[str]:
        """Those of `run_ids` somebody asked to cancel."""

    async def delete(self, run_ids: list[str]) -> int:
        """Remove these runs' logs (their conversations were deleted); how many existed. Not abstract: a backend
        without it keeps logs until they expire."""
        return 0

    @abstractmethod
    def follow(self, run_id: str, after_seq: int, *, settle: Settle) -> AsyncIterator[tuple[int, str]]:
        """(seq, event) after `after_seq` until the terminal one; ResyncRequired when they are not retained."""

    async def close(self) -> None:
        """Release connections."""
        return None

    async def ping(self) -> None:
        """Raise (one of `errors`) when the store does not answer; for /readyz (a backend without a store is always ready)."""
        return None


class MemoryRunLog(RunLog):
    """One process: runs live in their owner's memory only, so there is nothing to copy or to read elsewhere."""

    shared = False

    async def append(self, run_id: str, first_seq: int, events: list[str], *, terminal: bool) -> bool:
        return True

    async def rewrite(self, run_id: str, events: list[str], *, terminal: bool, first_seq: int = 1) -> None:
        return None

    async def close_stream(self, run_id: str, before_seq: str, after_seq: str) -> int:
        return -1

    async def lengths(self, run_ids: list[str]) -> list[int]:
        return [0 for _ in run_ids]

    async def request_cancel(self, run_id: str) -> None:
        return None

    async def cancel_requested(self, run_ids: list[str]) -> list[str]:
        return []

    async def follow(self, run_id: str, after_seq: int, *, settle: Settle) -> AsyncIterator[tuple[int, str]]:
        raise ResyncRequired(run_id)
        yield  # an async generator


def run_log_from_settings() -> RunLog:
    """A new instance of the configured backend (callers keep one per event loop: clients are bound to it)."""
    cls = import_string(chat_settings.CHAT_RUN_LOG_BACKEND)
    return cast(RunLog, cls.from_settings(chat_settings))


# ---- Redis Streams --------------------------------------------------------------------------------

_TERMINAL_LUA = """
local function is_terminal(data)
  local head = string.sub(data, 1, 24)
  return string.find(head, '"type":"complete"', 1, true) or string.find(head, '"type":"error"', 1, true)
     or string.find(head, '"type":"cancelled"', 1, true)
end
"""

# Appends events with explicit ids unless the stream already ended (its dead-looking owner was swept and the
# stream closed for it: writing on would put events after a terminal one). KEYS[1] stream; ARGV[1] ttl;
# ARGV[2] first seq; ARGV[3..] events. Returns 1 written, -1 a hole (the stream lost entries: rewrite), -2 closed.
_APPEND = _TERMINAL_LUA + """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last_seq = 0
if #last > 0 then
  last_seq = tonumber(string.match(last[1][1], '^(%d+)'))
  if is_terminal(last[1][2][2]) then return -2 end
end
local first = tonumber(ARGV[2])
if last_seq < first - 1 then return -1 end
for i = 3, #ARGV do
  local seq = first + i - 3
  if seq > last_seq then redis.call('XADD', KEYS[1], seq .. '-0', 'e', ARGV[i]) end
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1
"""

# Appends a terminal event after the stream's last entry unless the stream is missing or already ended.
# KEYS[1] stream; ARGV[1], ARGV[2] the event's JSON before/after its seq; ARGV[3] ttl. Returns the seq or -1/0.
_CLOSE_STREAM = _TERMINAL_LUA + """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last == 0 then return -1 end
if is_terminal(last[1][2][2]) then return 0 end
local seq = tonumber(string.match(last[1][1], '^(%d+)')) + 1
redis.call('XADD', KEYS[1], seq .. '-0', 'e', ARGV[1] .. seq .. ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return seq
"""


Entry = tuple[str, dict[str, str]]  # a stream entry as read with decode_responses=True


def _seq(entry_id: str) -> int:
    return int(entry_id.split("-")[0])


class RedisRunLog(RunLog):
    """A Redis Stream per run (`<CHAT_REDIS_KEY_PREFIX>run:<id>`), entry id `<seq>-0`, expiring CHAT_RUN_LOG_TTL after the run ends."""

    errors = (rexc.ConnectionError, rexc.TimeoutError, ConnectionError, OSError, asyncio.TimeoutError)

    def __init__(self, url: str, ttl: float, prefix: str = "chat:") -> None:
        self.prefix = prefix
        self.redis: aioredis.Redis = aioredis.from_url(
            url, decode_responses=True, socket_connect_timeout=2, health_check_interval=10)
        self.ttl = max(1, round(ttl))  # EXPIRE takes whole seconds
        self._close_script = self.redis.register_script(_CLOSE_STREAM)
        self._append_script = self.redis.register_script(_APPEND)

    @classmethod
    def from_settings(cls, conf: ChatSettings) -> RedisRunLog:
        return cls(conf.CHAT_REDIS_URL, conf.CHAT_RUN_LOG_TTL, conf.CHAT_REDIS_KEY_PREFIX)

    def key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    def cancel_key(self, run_id: str) -> str:
        return f"{self.prefix}cancel:{run_id}"

    def _ttl(self, terminal: bool) -> int:
        return self.ttl if terminal else max(self.ttl, 24 * 3600)

    async def append(self, run_id: str, first_seq: int, events: list[str], *, terminal: bool) -> bool:
        """Append with explicit ids (a retried write cannot duplicate or reorder); a stream the sweep closed stays closed."""
        result = int(await self._append_script(keys=[self.key(run_id)], args=[self._ttl(terminal), first_seq, *events]))
        if result == -2:
            log.warning("run log of %s was closed by another process; not writing to it", run_id)
        return result != -1

    async def rewrite(self, run_id: str, events: list[str], *, terminal: bool, first_seq: int = 1) -> None:
        """Atomically: followers see the same ids and data again."""
        key = self.key(run_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(key)
        for seq, data in enumerate(events, start=first_seq):
            pipe.xadd(key, {"e": data}, id=f"{seq}-0")
        pipe.expire(key, self._ttl(terminal))
        await pipe.execute()

    async def close_stream(self, run_id: str, before_seq: str, after_seq: str) -> int:
        return int(await self._close_script(keys=[self.key(run_id)], args=[before_seq, after_seq, self.ttl]))

    async def lengths(self, run_ids: list[str]) -> list[int]:
        pipe = self.redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.xlen(self.key(run_id))
        return [int(n) for n in await pipe.execute()]

    async def ping(self) -> None:
        await self.redis.ping()

    async def request_cancel(self, run_id: str) -> None:
        await self.redis.set(self.cancel_key(run_id), "1", ex=24 * 3600)

    async def delete(self, run_ids: list[str]) -> int:
        if not run_ids:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.delete(self.key(run_id))
            pipe.delete(self.cancel_key(run_id))
        results = await pipe.execute()
        return sum(int(n) for n in results[0::2])  # logs that still existed (finished ones expire after CHAT_RUN_LOG_TTL)

    async def cancel_requested(self, run_ids: list[str]) -> list[str]:
        if not run_ids:
            return []
        values = await self.redis.mget([self.cancel_key(r) for r in run_ids])
        return [r for r, v in zip(run_ids, values, strict=True) if v]

    async def follow(self, run_id: str, after_seq: int, *, settle: Settle) -> AsyncIterator[tuple[int, str]]:
        """Replay stored events after `after_seq`, then block for new ones until the terminal event.

        When the stream is idle or missing, `settle` looks at the run in the database: "running" (keep
        waiting), "closed" (a terminal was appended: read on) or "gone" (resync)."""
        key = self.key(run_id)
        last = after_seq
        verified = False
        outage_since: float | None = None
        missing_since: float | None = None
        while True:
            try:
                if not verified:
                    first = cast(list[Entry], await self.redis.xrange(key, count=1))
                    if not first:
                        missing_since = missing_since or time.monotonic()
                        if await settle(run_id, time.monotonic() - missing_since) == "running":
                            await asyncio.sleep(0.2)  # not written yet, or being rewritten after a Redis restart
                            continue
                        raise ResyncRequired(run_id)
                    missing_since = None
                    if _seq(first[0][0]) > last + 1:
                        raise ResyncRequired(run_id)
                    tail = cast(list[Entry], await self.redis.xrevrange(key, count=1))
                    if tail:
                        tail_seq = _seq(tail[0][0])
                        if last >= tail_seq and is_terminal(tail[0][1]["e"]):
                            if last > tail_seq:
                                raise ResyncRequired(run_id)
                            return  # the caller already has everything, terminal included
                        if last > tail_seq + MAX_SEQ_AHEAD:
                            raise ResyncRequired(run_id)
                    verified = True
                resp = cast(list[tuple[str, list[Entry]]], await self.redis.xread({key: f"{last}-0"}, count=500, block=FOLLOW_BLOCK_MS))
                outage_since = None
            except ResyncRequired:
                raise
            except self.errors:
                now = time.monotonic()
                outage_since = outage_since or now
                if now - outage_since > REDIS_OUTAGE_LIMIT:
                    raise
                verified = False
                await asyncio.sleep(0.25)
                continue
            if not resp:
                await settle(run_id, None)  # idle: the run may have died, or Redis may have lost the stream
                verified = False
                continue
            for entry_id, entry in resp[0][1]:
                seq = _seq(entry_id)
                if seq != last + 1:  # never skip: a hole means the stream was replaced under us
                    verified = False
                    break
                last = seq
                data: str = entry["e"]
                yield seq, data
                if is_terminal(data):
                    return

    async def close(self) -> None:
        await self.redis.aclose()
