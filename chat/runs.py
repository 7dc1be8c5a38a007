"""Runs owned by this process: their event logs (memory, plus a Redis Stream when configured),
tasks, cancel/approve signalling across processes, heartbeats, the stale-run sweep and graceful stop.

Guarantees (tested in tests/resilience/):
- every event gets the next gapless seq and is in the in-memory log before any follower sees it;
  with Redis it is then copied, in order, to `chat:run:<id>` (entry id `<seq>-0`), and re-copied
  whole if Redis lost the stream (restart) while this process still holds the run;
- a follower in any process gets seq after_seq+1.. exactly once each, then exactly one terminal event,
  or `ResyncRequired` when those events are no longer retained anywhere;
- a run whose owner died is closed: the sweep marks it `interrupted` and appends a terminal `error`
  event to its stream, so followers elsewhere end cleanly;
- the channel layer is only a doorbell: cancel requests also leave a Redis key and approvals are
  recorded in the database, and the owner polls both on its heartbeat.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from django.conf import settings

from chat.events import TERMINAL_TYPES

log = logging.getLogger(__name__)
PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"[:64]
INTERRUPTED_MESSAGE = "The server process running this turn stopped; the partial answer was saved."
# A follower blocks this long in XREAD before it checks (in the database) that the run is still alive.
FOLLOW_BLOCK_MS = 2000
# How long a follower waits for Redis to come back before it gives up (the client then resumes).
REDIS_OUTAGE_LIMIT = 30.0
# A stream that lacks its terminal event this long after the run ended in the database gets it from there.
TERMINAL_GRACE = 3.0
# A resume asking for more than this many events past the end of a live stream is nonsense: resync.
MAX_SEQ_AHEAD = 10_000


class RunNotFound(Exception):
    """The run is unknown here (or not this user's)."""


class ResyncRequired(Exception):
    """The events asked for are no longer retained; reload the conversation over REST."""


def _redis_errors() -> tuple[type[BaseException], ...]:
    import redis.exceptions as rexc

    return (rexc.ConnectionError, rexc.TimeoutError, ConnectionError, OSError, asyncio.TimeoutError)


def _is_terminal(data: str) -> bool:
    head = data[:24]
    return any(f'"type":"{t}"' in head for t in TERMINAL_TYPES)


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # built once: this runs per event


def _dumps(event: dict[str, Any]) -> str:
    return _encode(event)


class RunHandle:
    """One live run in this process: its ordered events (seq = index + 1) and its followers."""

    __slots__ = (
        "run_id", "conversation_id", "user_id", "events", "done", "_changed", "task", "approvals",
        "cancel_requested", "interrupting", "finishing", "created", "finished_at", "_durable", "_durable_event", "_writer",
        "_written", "_rewrite", "_durable_changed", "_prefix", "_suffix",
    )

    def __init__(self, run_id: str, conversation_id: int, user_id: int, durable: "RedisRunLog | None" = None):
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.user_id = user_id
        self.events: list[str] = []
        self.done = False
        self._changed: asyncio.Future[None] | None = None  # created only while a follower waits
        self._prefix = f'"run_id":{_dumps(run_id)},"seq":'
        self._suffix = f',"conversation_id":{_dumps(conversation_id)}'
        self.task: asyncio.Task[Any] | None = None
        self.approvals: dict[str, asyncio.Future[bool]] = {}
        self.cancel_requested = False
        self.interrupting = False  # set by a graceful shutdown: the run ends `interrupted`, not `cancelled`
        self.finishing = False  # saving its result: a cancel now would contradict what is being saved
        self.created = time.monotonic()
        self.finished_at: float | None = None
        self._durable = durable
        self._durable_event = asyncio.Event() if durable else None
        self._writer: asyncio.Task[Any] | None = None
        self._written = 0  # events known to be in the Redis Stream
        self._rewrite = False
        self._durable_changed = asyncio.Event()

    @property
    def last_seq(self) -> int:
        return len(self.events)

    @property
    def durable_seq(self) -> int:
        """The last seq other processes can read (all of them without Redis: nobody else reads)."""
        return self._written if self._durable is not None else len(self.events)

    def append(self, type_: str, fields: dict[str, Any]) -> int:
        """Give the event the next seq, log it, then wake followers; returns its seq."""
        if self.done:
            raise RuntimeError("run already ended")
        seq = len(self.events) + 1
        # the common envelope is pre-encoded; only the event's own fields go through the encoder
        body = _dumps(fields)[1:-1] if fields else ""
        self.events.append(f'{{"type":"{type_}",{self._prefix}{seq}{self._suffix}{"," if body else ""}{body}}}')
        if type_ in TERMINAL_TYPES:
            self.done = True
            self.finished_at = time.monotonic()
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)
        self._kick_writer()
        return seq

    def _kick_writer(self) -> None:
        if self._durable_event is None:
            return
        self._durable_event.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_durable(), name=f"runlog:{self.run_id}")

    async def follow(self, after_seq: int = 0) -> AsyncIterator[tuple[int, str]]:
        """(seq, event) after `after_seq`, then live ones, until the terminal event."""
        i = after_seq
        while True:
            while i < len(self.events):
                i += 1
                yield i, self.events[i - 1]
            if self.done:
                return
            if self._changed is None:
                self._changed = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._changed)  # shared by every follower: one leaving must not cancel it

    async def wait_done(self) -> None:
        async for _ in self.follow(len(self.events)):
            pass

    async def wait_durable(self, seq: int, timeout: float) -> bool:
        """Wait until events up to `seq` are readable by other processes; False on timeout."""
        deadline = time.monotonic() + timeout
        while self.durable_seq < seq:
            changed = self._durable_changed
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                return False
        return True

    def request_rewrite(self) -> None:
        """The Redis copy was found incomplete (Redis restarted): write the whole log again."""
        if self._durable is None:
            return
        self._rewrite = True
        self._kick_writer()

    async def _write_durable(self) -> None:
        """Copy events to the Redis Stream in order, batching whatever accumulated meanwhile."""
        assert self._durable is not None and self._durable_event is not None
        delay = 0.1
        while True:
            await self._durable_event.wait()
            self._durable_event.clear()
            n = len(self.events)
            if self._written < n or self._rewrite:
                terminal = self.done and n == len(self.events)
                try:
                    complete = True
                    if not self._rewrite:
                        complete = await self._durable.append(self.run_id, self._written + 1, self.events[self._written:n], terminal=terminal)
                    if self._rewrite or not complete:
                        log.warning("run log of %s was incomplete in Redis; writing it again", self.run_id)
                        await self._durable.rewrite(self.run_id, self.events[:n], terminal=terminal)
                    self._written, self._rewrite, delay = n, False, 0.1
                    changed, self._durable_changed = self._durable_changed, asyncio.Event()
                    changed.set()
                except asyncio.CancelledError:
                    raise
                except Exception:  # Redis down: keep the events in memory and retry with backoff
                    log.warning("run log write to Redis failed; retrying", exc_info=log.isEnabledFor(logging.DEBUG))
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 2.0)
                    self._durable_event.set()
                    continue
            if self.done and self._written == len(self.events):
                return


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


class RedisRunLog:
    """A Redis Stream per run (`chat:run:<id>`), entry id `<seq>-0`, expiring after the run ends."""

    def __init__(self, url: str, ttl: int):
        import redis.asyncio as aioredis

        self.redis = aioredis.from_url(url, decode_responses=True, socket_connect_timeout=2, health_check_interval=10)
        self.ttl = ttl
        self._close_script = self.redis.register_script(_CLOSE_STREAM)
        self._append_script = self.redis.register_script(_APPEND)

    @staticmethod
    def key(run_id: str) -> str:
        return f"chat:run:{run_id}"

    @staticmethod
    def cancel_key(run_id: str) -> str:
        return f"chat:cancel:{run_id}"

    def _ttl(self, terminal: bool) -> int:
        return self.ttl if terminal else max(self.ttl, 24 * 3600)

    async def append(self, run_id: str, first_seq: int, events: list[str], *, terminal: bool) -> bool:
        """Append events with explicit ids (a retried write cannot duplicate or reorder them).

        Returns False when the stream turns out to lack earlier entries (Redis lost it): rewrite it whole.
        A stream already closed by the sweep (this process looked dead) is left as it is."""
        result = int(await self._append_script(keys=[self.key(run_id)], args=[self._ttl(terminal), first_seq, *events]))
        if result == -2:
            log.warning("run log of %s was closed by another process; not writing to it", run_id)
        return result != -1

    async def rewrite(self, run_id: str, events: list[str], *, terminal: bool) -> None:
        """Replace the stream by exactly `events` (atomically: followers see the same ids and data again)."""
        key = self.key(run_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(key)
        for seq, data in enumerate(events, start=1):
            pipe.xadd(key, {"e": data}, id=f"{seq}-0")
        pipe.expire(key, self._ttl(terminal))
        await pipe.execute()

    async def length(self, run_id: str) -> int:
        return int(await self.redis.xlen(self.key(run_id)))

    async def close_stream(self, event: dict[str, Any]) -> int:
        """Append `event` (its seq filled in) as the terminal entry; -1 if the stream is gone, 0 if already closed."""
        body = _dumps({**event, "seq": 0})
        marker = '"seq":0'
        at = body.index(marker) + len('"seq":')
        return int(await self._close_script(keys=[self.key(event["run_id"])], args=[body[:at], body[at + 1:], self.ttl]))

    async def request_cancel(self, run_id: str) -> None:
        await self.redis.set(self.cancel_key(run_id), "1", ex=24 * 3600)

    async def cancel_requested(self, run_ids: list[str]) -> list[str]:
        if not run_ids:
            return []
        values = await self.redis.mget([self.cancel_key(r) for r in run_ids])
        return [r for r, v in zip(run_ids, values) if v]

    async def follow(
        self, run_id: str, after_seq: int, *, settle: Callable[[str, float | None], Awaitable[str]],
        block_ms: int = FOLLOW_BLOCK_MS,
    ) -> AsyncIterator[tuple[int, str]]:
        """Replay stored events after `after_seq`, then block for new ones until the terminal event.

        `settle(run_id, missing_for)` looks at the run in the database when the stream is idle (None) or
        missing (for that many seconds): "running" (keep waiting), "closed" (a terminal was appended: read
        on) or "gone" (resync)."""
        key = self.key(run_id)
        last = after_seq
        verified = False
        outage_since: float | None = None
        missing_since: float | None = None
        errors = _redis_errors()
        while True:
            try:
                if not verified:
                    first = await self.redis.xrange(key, count=1)
                    if not first:
                        missing_since = missing_since or time.monotonic()
                        state = await settle(run_id, time.monotonic() - missing_since)
                        if state == "running":  # not written yet, or being rewritten after a Redis restart
                            await asyncio.sleep(0.2)
                            continue
                        raise ResyncRequired(run_id)
                    missing_since = None
                    if int(first[0][0].split("-")[0]) > last + 1:
                        raise ResyncRequired(run_id)
                    tail = await self.redis.xrevrange(key, count=1)
                    if tail:
                        tail_seq = int(tail[0][0].split("-")[0])
                        if last >= tail_seq and _is_terminal(tail[0][1]["e"]):
                            if last > tail_seq:
                                raise ResyncRequired(run_id)
                            return  # the caller already has everything, terminal included
                        if last > tail_seq + MAX_SEQ_AHEAD:
                            raise ResyncRequired(run_id)
                    verified = True
                resp = await self.redis.xread({key: f"{last}-0"}, count=500, block=block_ms)
                outage_since = None
            except ResyncRequired:
                raise
            except errors:
                now = time.monotonic()
                outage_since = outage_since or now
                if now - outage_since > REDIS_OUTAGE_LIMIT:
                    raise
                verified = False
                await asyncio.sleep(0.25)
                continue
            if not resp:
                # idle: the run may have died, or Redis may have lost the stream; look again
                await settle(run_id, None)
                verified = False
                continue
            for entry_id, fields in resp[0][1]:
                seq = int(entry_id.split("-")[0])
                if seq != last + 1:  # never skip: a hole means the stream was replaced under us
                    verified = False
                    break
                last = seq
                data = fields["e"]
                yield seq, data
                if _is_terminal(data):
                    return

    async def close(self) -> None:
        await self.redis.aclose()


class RunManager:
    """The process's registry of runs it owns, and the way to reach runs owned elsewhere."""

    def __init__(self) -> None:
        self.handles: dict[str, RunHandle] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._durable: RedisRunLog | None = None
        self._durable_ready = False
        self._background: asyncio.Task[Any] | None = None
        self._control_channel: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._signals_loop: asyncio.AbstractEventLoop | None = None
        self.stopping = False

    # ---- configuration ---------------------------------------------------------------------------

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._durable, self._durable_ready = loop, None, False
            self._background, self._control_channel = None, None
            self.stopping = False

    def durable(self) -> RedisRunLog | None:
        """The Redis run log when REDIS_URL is set (one client per event loop)."""
        self._bind_loop()
        if not self._durable_ready:
            self._durable = RedisRunLog(settings.REDIS_URL, settings.CHAT_RUN_LOG_TTL) if settings.REDIS_URL else None
            self._durable_ready = True
        return self._durable

    # ---- owning runs -----------------------------------------------------------------------------

    def create(self, run_id: str, conversation_id: int, user_id: int) -> RunHandle:
        handle = RunHandle(run_id, conversation_id, user_id, durable=self.durable())
        self.handles[run_id] = handle
        return handle

    def start(self, handle: RunHandle, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` as a task owned by the process (not by any socket or request)."""
        task = asyncio.get_running_loop().create_task(coro, name=f"run:{handle.run_id}")
        handle.task = task
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._finished(handle, t))
        self.ensure_background()
        self.install_signal_handlers()
        return task

    def _finished(self, handle: RunHandle, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("run %s crashed", handle.run_id, exc_info=task.exception())
        # keep finished runs replayable from memory for the retention window
        loop = asyncio.get_running_loop()
        loop.call_later(settings.CHAT_RUN_LOG_TTL, self._forget, handle)

    def _forget(self, handle: RunHandle) -> None:
        if self.handles.get(handle.run_id) is handle:
            del self.handles[handle.run_id]

    def local(self, run_id: str) -> RunHandle | None:
        return self.handles.get(run_id)

    def running_ids(self) -> list[str]:
        return [rid for rid, h in self.handles.items() if not h.done]

    # ---- following -------------------------------------------------------------------------------

    async def follow(self, run_id: str, after_seq: int) -> AsyncIterator[tuple[int, str]]:
        """(seq, event) after `after_seq`, live until the terminal one, from wherever the run lives."""
        self.ensure_background()
        handle = self.handles.get(run_id)
        if handle is not None:
            if after_seq > handle.last_seq:
                raise ResyncRequired(run_id)
            async for item in handle.follow(after_seq):
                yield item
            return
        durable = self.durable()
        if durable is None:
            raise ResyncRequired(run_id)
        async for item in durable.follow(run_id, after_seq, settle=self._settle):
            yield item

    async def _settle(self, run_id: str, missing_for: float | None) -> str:
        """For a follower whose stream is idle or missing: is the run alive? Close the stream of a dead one."""
        from chat import services
        from chat.models import Run

        if run_id in self.handles:  # it is (now) owned here: its stream is being written
            return "running"
        fields = ("status", "heartbeat_at", "finished_at")
        row = await Run.objects.filter(pk=run_id).values(*fields).afirst()
        if row is None:
            return "gone"
        if row["status"] == Run.Status.RUNNING:
            if row["heartbeat_at"] is None or _age(row["heartbeat_at"]) <= settings.CHAT_STALE_AFTER:
                return "running"  # its owner is alive and writes (or, after a Redis restart, rewrites) the stream
            await services.run_sweep_stale()  # its owner stopped beating
            row = await Run.objects.filter(pk=run_id).values(*fields).afirst()
            if row is None:
                return "gone"
            if row["status"] == Run.Status.RUNNING:
                return "running"
        if missing_for is not None:
            # Ended, and no stream: expired (resync), or lost in a Redis restart and about to be rewritten by
            # its owner if that is alive and the run recent: give the owner a couple of heartbeats.
            # (Not for a swept run: its owner is dead. Not past the TTL: then the stream simply expired.)
            recent = (row["status"] != Run.Status.INTERRUPTED and row["finished_at"] is not None
                      and _age(row["finished_at"]) < min(300, settings.CHAT_RUN_LOG_TTL))
            return "running" if recent and missing_for < 2 * settings.CHAT_HEARTBEAT_INTERVAL + 1 else "gone"
        # ended in the database; normally its owner writes the terminal event within milliseconds
        if row["status"] != Run.Status.INTERRUPTED and (row["finished_at"] is None or _age(row["finished_at"]) < TERMINAL_GRACE):
            return "running"
        appended = await self.close_durable(run_id)
        return "closed" if appended >= 0 else "gone"

    async def close_durable(self, run_id: str) -> int:
        """Give the stream of a run that ended without writing it (its process died) its terminal event."""
        from asgiref.sync import sync_to_async

        from chat import selectors
        from chat.models import Run

        durable = self.durable()
        if durable is None:
            return -1
        run = await Run.objects.select_related("assistant_message").filter(pk=run_id).afirst()
        if run is None or run.status == Run.Status.RUNNING:
            return -1
        event = await sync_to_async(selectors.run_complete_payload)(run=run, user=None) if run.status != Run.Status.INTERRUPTED else None
        if event is None:
            event = {"type": "error", "run_id": str(run.pk), "seq": 0, "conversation_id": run.conversation_id,
                     "code": run.error_code or "interrupted", "message": run.error_message or INTERRUPTED_MESSAGE}
        seq = await durable.close_stream(event)
        if seq > 0:
            await Run.objects.filter(pk=run_id).aupdate(last_seq=seq)
        return seq

    # ---- signalling ------------------------------------------------------------------------------

    async def cancel(self, run_id: str) -> None:
        """Ask the owning process to cancel the run (directly when it is this one)."""
        handle = self.handles.get(run_id)
        if handle is not None:
            if not handle.done and not handle.finishing and handle.task is not None:
                handle.cancel_requested = True
                handle.task.cancel()
            return
        durable = self.durable()
        if durable is not None:
            try:  # the owner also polls this key on its heartbeat: a lost doorbell is only a delay
                await durable.request_cancel(run_id)
            except _redis_errors():
                log.warning("could not record the cancel request of %s in Redis", run_id)
        await self._signal(run_id, {"type": "run.cancel", "run_id": run_id})

    async def deliver_approval(self, run_id: str, tool_use_id: str, approved: bool) -> None:
        """Hand an (already recorded) approval answer to the process running the tool."""
        handle = self.handles.get(run_id)
        if handle is not None:
            fut = handle.approvals.get(tool_use_id)
            if fut is not None and not fut.done():
                fut.set_result(approved)
            return
        # the answer is in the database; the owner also finds it there on its heartbeat
        await self._signal(run_id, {"type": "run.approve", "run_id": run_id, "tool_use_id": tool_use_id, "approved": approved})

    async def _signal(self, run_id: str, message: dict[str, Any]) -> None:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is not None:
            try:
                await layer.group_send(f"run.{run_id}", message)
            except Exception:  # at-most-once anyway; the durable paths above cover a lost doorbell
                log.warning("channel layer group_send failed for run %s", run_id, exc_info=True)

    async def listen_for(self, run_id: str) -> None:
        """Subscribe this process's control channel to the run's group (for remote cancel/approve)."""
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is None:
            return
        try:
            if self._control_channel is None:
                self._control_channel = await layer.new_channel("runctl.")
                self._spawn(self._control_loop(layer, self._control_channel))
            await layer.group_add(f"run.{run_id}", self._control_channel)
        except Exception:  # the heartbeat's polling still delivers cancels and approvals
            log.warning("could not subscribe to run %s control messages", run_id, exc_info=True)

    async def _control_loop(self, layer: Any, channel: str) -> None:
        handlers: dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, None]]] = {
            "run.cancel": lambda m: self.cancel(m["run_id"]) if m["run_id"] in self.handles else _noop(),
            "run.approve": lambda m: self.deliver_approval(m["run_id"], m["tool_use_id"], m["approved"]) if m["run_id"] in self.handles else _noop(),
        }
        while True:
            try:
                msg = await layer.receive(channel)
                handler = handlers.get(msg.get("type", ""))
                if handler is not None:
                    await handler(msg)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("run control channel error", exc_info=True)
                await asyncio.sleep(0.5)

    # ---- heartbeat + sweep -----------------------------------------------------------------------

    def ensure_background(self) -> None:
        """Start the heartbeat/sweep task once per event loop."""
        self._bind_loop()
        if self._background is None or self._background.done():
            self._background = self._spawn(self._heartbeat_loop())

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _heartbeat_loop(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("heartbeat failed", exc_info=True)
            await asyncio.sleep(settings.CHAT_HEARTBEAT_INTERVAL)

    async def tick(self) -> None:
        """One heartbeat: mark owned runs alive, sweep dead owners' runs, repair and poll what the doorbell may miss."""
        from chat import services
        from chat.limits import limiter

        await services.run_heartbeat(run_ids=self.running_ids(), process_id=PROCESS_ID)
        if await services.run_sweep_stale():
            await self._close_swept()
        await self._poll_approvals()
        durable = self.durable()
        if durable is not None:
            for step in (self._verify_durable, self._poll_cancels):
                try:
                    await step(durable)
                except _redis_errors():
                    log.warning("Redis unavailable during heartbeat")
        await limiter.refresh()

    async def _close_swept(self) -> None:
        from datetime import timedelta

        from django.utils import timezone

        from chat.models import Run

        if self.durable() is None:
            return
        since = timezone.now() - timedelta(seconds=60)
        ids = [str(pk) async for pk in Run.objects.filter(status=Run.Status.INTERRUPTED, finished_at__gte=since).values_list("pk", flat=True)[:500]]
        for run_id in ids:
            try:
                await self.close_durable(run_id)
            except _redis_errors():
                log.warning("could not close the stream of interrupted run %s", run_id)

    async def _verify_durable(self, durable: RedisRunLog) -> None:
        """After a Redis restart the streams are gone: rewrite those of runs this process still holds."""
        now = time.monotonic()
        check = [h for h in self.handles.values() if h._durable is not None and h.durable_seq == h.last_seq
                 and not h._rewrite and (not h.done or (h.finished_at is not None and now - h.finished_at < 300))]
        if not check:
            return
        pipe = durable.redis.pipeline(transaction=False)
        for h in check:
            pipe.xlen(durable.key(h.run_id))
        lengths = await pipe.execute()
        for h, length in zip(check, lengths):
            if int(length) < h.durable_seq:
                h.request_rewrite()

    async def _poll_cancels(self, durable: RedisRunLog) -> None:
        for run_id in await durable.cancel_requested(self.running_ids()):
            await self.cancel(run_id)

    async def _poll_approvals(self) -> None:
        from chat.models import PendingApproval

        waiting = {(rid, tid): fut for rid, h in self.handles.items() if not h.done for tid, fut in h.approvals.items() if not fut.done()}
        if not waiting:
            return
        rows = PendingApproval.objects.filter(run_id__in={rid for rid, _ in waiting}, approved__isnull=False)
        async for run_id, tool_use_id, approved in rows.values_list("run_id", "tool_use_id", "approved"):
            fut = waiting.get((str(run_id), tool_use_id))
            if fut is not None and not fut.done():
                fut.set_result(bool(approved))

    # ---- graceful shutdown -----------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        """On SIGTERM, let running runs finish (or checkpoint them) before the server's own handler stops it.

        daphne has no lifespan hook: the handler is installed when this loop starts its first run and
        chains to whatever handler (Twisted's reactor stop, or the default) was there before."""
        loop = asyncio.get_running_loop()
        if (not getattr(settings, "CHAT_GRACEFUL_SHUTDOWN", True) or self._signals_loop is loop
                or threading.current_thread() is not threading.main_thread()):
            return
        previous = signal.getsignal(signal.SIGTERM)
        try:
            loop.add_signal_handler(signal.SIGTERM, self._on_sigterm, loop, previous)
        except (NotImplementedError, RuntimeError, ValueError):
            return
        self._signals_loop = loop

    def _on_sigterm(self, loop: asyncio.AbstractEventLoop, previous: Any) -> None:
        if self.stopping:
            return
        log.warning("SIGTERM: finishing %d running run(s) before stopping", len(self.running_ids()))

        async def stop() -> None:
            try:
                await self.shutdown(timeout=getattr(settings, "CHAT_SHUTDOWN_TIMEOUT", 10.0))
            finally:
                with _suppress():
                    loop.remove_signal_handler(signal.SIGTERM)
                self._signals_loop = None
                handler = previous if callable(previous) or previous in (signal.SIG_IGN, signal.SIG_DFL) else signal.SIG_DFL
                signal.signal(signal.SIGTERM, handler)
                os.kill(os.getpid(), signal.SIGTERM)  # now the server's own shutdown

        self._spawn(stop())

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Graceful stop: let running runs finish for up to `timeout`, then interrupt them (their partial
        answer is saved and their terminal event written), and flush the run logs to Redis."""
        self.stopping = True
        deadline = time.monotonic() + timeout
        while True:  # runs started during the grace period are waited for too
            running = [h.task for h in self.handles.values() if h.task is not None and not h.task.done()]
            if not running:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for h in self.handles.values():
                    if h.task is not None and not h.task.done() and not h.finishing:
                        h.interrupting = True
                        h.task.cancel()
                await asyncio.wait(running, timeout=5)
                break
            await asyncio.wait(running, timeout=remaining, return_when=asyncio.ALL_COMPLETED)
        writers = [h._writer for h in self.handles.values() if h._writer is not None and not h._writer.done()]
        if writers:
            await asyncio.wait(writers, timeout=5)


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def _age(when: Any) -> float:
    from django.utils import timezone

    return (timezone.now() - when).total_seconds()


async def _noop() -> None:
    return None


manager = RunManager()
