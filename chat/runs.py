"""Runs owned by this process: their event logs (memory, plus a Redis Stream when configured),
tasks, cancel/approve signalling across processes, heartbeats and the stale-run sweep."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from django.conf import settings

from chat.events import TERMINAL_TYPES

log = logging.getLogger(__name__)
PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class RunNotFound(Exception):
    """The run is unknown here (or not this user's)."""


class ResyncRequired(Exception):
    """The events asked for are no longer retained; reload the conversation over REST."""


class RunHandle:
    """One live run in this process: its ordered events (seq = index + 1) and its followers."""

    __slots__ = (
        "run_id", "conversation_id", "user_id", "events", "done", "_changed", "task", "approvals",
        "cancel_requested", "created", "_durable", "_durable_event", "_writer",
    )

    def __init__(self, run_id: str, conversation_id: int, user_id: int, durable: "RedisRunLog | None" = None):
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.user_id = user_id
        self.events: list[str] = []
        self.done = False
        self._changed = asyncio.Event()
        self.task: asyncio.Task[Any] | None = None
        self.approvals: dict[str, asyncio.Future[bool]] = {}
        self.cancel_requested = False
        self.created = time.monotonic()
        self._durable = durable
        self._durable_event = asyncio.Event() if durable else None
        self._writer: asyncio.Task[Any] | None = None

    @property
    def last_seq(self) -> int:
        return len(self.events)

    def append(self, type_: str, fields: dict[str, Any]) -> int:
        """Give the event the next seq, log it, then wake followers; returns its seq."""
        if self.done:
            raise RuntimeError("run already ended")
        seq = len(self.events) + 1
        event = {"type": type_, "run_id": self.run_id, "seq": seq, "conversation_id": self.conversation_id}
        event.update(fields)
        self.events.append(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
        if type_ in TERMINAL_TYPES:
            self.done = True
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        if self._durable_event is not None:
            self._durable_event.set()
            if self._writer is None:
                self._writer = asyncio.get_running_loop().create_task(self._write_durable())
        return seq

    async def follow(self, after_seq: int = 0) -> AsyncIterator[tuple[int, str]]:
        """(seq, event) after `after_seq`, then live ones, until the terminal event."""
        i = after_seq
        while True:
            changed = self._changed
            while i < len(self.events):
                i += 1
                yield i, self.events[i - 1]
            if self.done:
                return
            await changed.wait()

    async def wait_done(self) -> None:
        async for _ in self.follow(len(self.events)):
            pass

    async def _write_durable(self) -> None:
        """Copy events to the Redis Stream in order, batching whatever accumulated meanwhile."""
        assert self._durable is not None and self._durable_event is not None
        written = 0
        while True:
            await self._durable_event.wait()
            self._durable_event.clear()
            batch = self.events[written:]
            if batch:
                try:
                    await self._durable.append(self.run_id, written + 1, batch, terminal=self.done and written + len(batch) == len(self.events))
                    written += len(batch)
                except Exception:  # Redis down: keep the events in memory and retry shortly
                    log.warning("run log write to Redis failed; retrying", exc_info=True)
                    await asyncio.sleep(0.2)
                    self._durable_event.set()
                    continue
            if self.done and written == len(self.events):
                return


class RedisRunLog:
    """A Redis Stream per run (`chat:run:<id>`), entry id `<seq>-0`, expiring after the run ends."""

    def __init__(self, url: str, ttl: int):
        import redis.asyncio as aioredis

        self.redis = aioredis.from_url(url, decode_responses=True)
        self.ttl = ttl

    @staticmethod
    def key(run_id: str) -> str:
        return f"chat:run:{run_id}"

    async def append(self, run_id: str, first_seq: int, events: list[str], *, terminal: bool) -> None:
        """Append events with explicit ids so a retried write cannot duplicate or reorder them."""
        key = self.key(run_id)
        pipe = self.redis.pipeline(transaction=False)
        for offset, data in enumerate(events):
            pipe.xadd(key, {"e": data}, id=f"{first_seq + offset}-0")
        pipe.expire(key, self.ttl if terminal else max(self.ttl, 24 * 3600))
        try:
            await pipe.execute()
        except Exception as exc:  # an id already written (retry after a lost reply) is fine
            if "equal or smaller" not in str(exc):
                raise

    async def follow(self, run_id: str, after_seq: int, *, block_ms: int = 5000, idle_timeout: float = 60.0) -> AsyncIterator[tuple[int, str]]:
        """Replay stored events after `after_seq`, then block for new ones until the terminal event."""
        key = self.key(run_id)
        last_id = f"{after_seq}-0"
        if not await self.redis.exists(key):
            raise ResyncRequired(run_id)
        first = await self.redis.xrange(key, count=1)
        if first and int(first[0][0].split("-")[0]) > after_seq + 1:
            raise ResyncRequired(run_id)
        idle_since = time.monotonic()
        while True:
            resp = await self.redis.xread({key: last_id}, count=500, block=block_ms)
            if not resp:
                if time.monotonic() - idle_since > idle_timeout:
                    return
                continue
            idle_since = time.monotonic()
            for entry_id, fields in resp[0][1]:
                last_id = entry_id
                data = fields["e"]
                yield int(entry_id.split("-")[0]), data
                if _is_terminal(data):
                    return

    async def close(self) -> None:
        await self.redis.aclose()


def _is_terminal(data: str) -> bool:
    head = data[:24]
    return any(f'"type":"{t}"' in head for t in TERMINAL_TYPES)


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

    # ---- configuration ---------------------------------------------------------------------------

    def durable(self) -> RedisRunLog | None:
        """The Redis run log when REDIS_URL is set (one client per event loop)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._durable, self._durable_ready = loop, None, False
            self._background, self._control_channel = None, None
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
        return task

    def _finished(self, handle: RunHandle, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("run %s crashed", handle.run_id, exc_info=task.exception())
        # keep finished runs replayable from memory for the retention window
        loop = asyncio.get_running_loop()
        loop.call_later(settings.CHAT_RUN_LOG_TTL, self.handles.pop, handle.run_id, None)

    def local(self, run_id: str) -> RunHandle | None:
        return self.handles.get(run_id)

    def running_ids(self) -> list[str]:
        return [rid for rid, h in self.handles.items() if not h.done]

    # ---- following -------------------------------------------------------------------------------

    async def follow(self, run_id: str, after_seq: int) -> AsyncIterator[tuple[int, str]]:
        """(seq, event) after `after_seq`, live until the terminal one, from wherever the run lives."""
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
        async for item in durable.follow(run_id, after_seq):
            yield item

    # ---- signalling ------------------------------------------------------------------------------

    async def cancel(self, run_id: str) -> None:
        """Ask the owning process to cancel the run (directly when it is this one)."""
        handle = self.handles.get(run_id)
        if handle is not None:
            if not handle.done and handle.task is not None:
                handle.cancel_requested = True
                handle.task.cancel()
            return
        await self._signal(run_id, {"type": "run.cancel", "run_id": run_id})

    async def deliver_approval(self, run_id: str, tool_use_id: str, approved: bool) -> None:
        """Hand an (already recorded) approval answer to the process running the tool."""
        handle = self.handles.get(run_id)
        if handle is not None:
            fut = handle.approvals.get(tool_use_id)
            if fut is not None and not fut.done():
                fut.set_result(approved)
            return
        await self._signal(run_id, {"type": "run.approve", "run_id": run_id, "tool_use_id": tool_use_id, "approved": approved})

    async def _signal(self, run_id: str, message: dict[str, Any]) -> None:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is not None:
            await layer.group_send(f"run.{run_id}", message)

    async def listen_for(self, run_id: str) -> None:
        """Subscribe this process's control channel to the run's group (for remote cancel/approve)."""
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is None:
            return
        if self._control_channel is None:
            self._control_channel = await layer.new_channel("runctl.")
            self._spawn(self._control_loop(layer, self._control_channel))
        await layer.group_add(f"run.{run_id}", self._control_channel)

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
        if self._background is None or self._background.done():
            self._background = self._spawn(self._heartbeat_loop())

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _heartbeat_loop(self) -> None:
        from chat import services

        while True:
            try:
                await services.run_heartbeat(run_ids=self.running_ids(), process_id=PROCESS_ID)
                await services.run_sweep_stale()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("heartbeat failed", exc_info=True)
            await asyncio.sleep(settings.CHAT_HEARTBEAT_INTERVAL)

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Graceful stop: let running runs finish for up to `timeout`, then cancel (which checkpoints)."""
        running = [h.task for h in self.handles.values() if h.task is not None and not h.done]
        if running:
            _, pending = await asyncio.wait(running, timeout=timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5)


async def _noop() -> None:
    return None


manager = RunManager()
