"""Soak: concurrent users with random disconnects, resumes, cancels and provider faults, for a long time.

    python -m tests.bench.soak [--seconds 1800] [--users 8]

Runs in its own clean process (a fresh SQLite database, the real websocket consumer, the in-memory run log)
and prints JSON figures: turns by outcome, reconnects, RSS samples, the RSS spread after warm-up (the first
fifth of the time), tasks and open sockets left at the end, and the invariant checks of
tests/resilience/invariants.py (every run's trace gapless with one terminal event; the database: every
acknowledged message stored once, one running run per conversation, valid histories). Exit code 1 when an
invariant or a figure fails (RSS spread over 10%, a leaked task or socket). tests/hardening/test_soak.py
runs it (marked `slow`: not part of the default test run).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from chat.providers.base import MessageEnd, Provider, ProviderError, ProviderEvent, ProviderRequest, TextDelta, Usage

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("complete", "error", "cancelled")


class SoakProvider(Provider):
    """Bench-like text at ~3000 tokens/s; one turn in ten fails mid-stream (a provider fault)."""

    name = "soak"
    is_offline = True

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        rng = random.Random()
        n = rng.randint(50, 1500)
        fail_at = rng.randint(1, n) if rng.random() < 0.1 else -1
        for i in range(n):
            if i == fail_at:
                raise ProviderError("overloaded", "soak: injected provider fault", retryable=False)
            if i % 30 == 0:
                await asyncio.sleep(0.01)
            yield TextDelta(f" w{i}")
        yield MessageEnd("end_turn", Usage(10, n))


async def user_loop(token: str, user_id: int, deadline: float, seed: int, stats: Counter[str], acked: list[tuple[int, str]]) -> None:
    from channels.testing import WebsocketCommunicator

    from config.asgi import application
    from tests.resilience.invariants import RunTrace

    rng = random.Random(seed)
    headers = [(b"authorization", f"Token {token}".encode()), (b"host", b"testserver")]

    async def connect() -> Any:
        comm = WebsocketCommunicator(application, "/ws/chat/", headers=headers)
        ok, _ = await comm.connect(timeout=20)
        assert ok
        return comm

    async def recv(comm: Any) -> dict[str, Any]:
        from tests.protocol import check_wire

        return check_wire(await comm.receive_from(timeout=60))

    comm = await connect()
    conversation: int | None = None
    while time.monotonic() < deadline:
        cmid = os.urandom(8).hex()
        await comm.send_to(text_data=json.dumps({"type": "chat.send", "client_message_id": cmid, "conversation_id": conversation,
                                                 "message": f"soak {cmid}", "context": {}}))
        trace = RunTrace()
        action = rng.random()
        while not trace.done:
            ev = await recv(comm)
            if "seq" not in ev:
                if ev.get("code") == "busy":  # the previous run of this conversation is still finishing
                    await asyncio.sleep(0.2)
                    break
                raise AssertionError(f"frame error {ev}")
            if ev["seq"] <= trace.last_seq:
                continue
            trace.add(ev)
            if ev["seq"] == 1:
                acked.append((user_id, cmid))
            if trace.done:
                break
            if action < 0.15 and ev["seq"] == 3:  # drop the socket mid-stream, reconnect, resume
                await comm.disconnect()
                comm = await connect()
                trace.reconnected()
                stats["reconnects"] += 1
                await comm.send_to(text_data=json.dumps({"type": "chat.resume", "run_id": trace.run_id, "after_seq": trace.last_seq}))
            elif 0.15 <= action < 0.25 and ev["seq"] == 4:
                await comm.send_to(text_data=json.dumps({"type": "chat.cancel", "run_id": trace.run_id}))
        if not trace.events:
            continue
        if trace.done:
            trace.check()
            stats[trace.terminal["type"] if trace.terminal["type"] != "error" else "error:" + trace.terminal["code"]] += 1
            conversation = trace.events[0]["conversation_id"] if rng.random() < 0.7 else None
        if rng.random() < 0.05:  # a user leaves for good and comes back on a new socket
            await comm.disconnect()
            comm = await connect()
        await asyncio.sleep(rng.random() * 0.3)
    await comm.disconnect()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1800)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="pagechat-soak-")
    os.environ.update(DEBUG="0", SECRET_KEY=os.environ.get("SECRET_KEY") or "soak-" + "k" * 50, ALLOWED_HOSTS="testserver",
                      DATABASE_URL=os.environ.get("SOAK_DATABASE_URL") or f"sqlite:///{tmp}/db.sqlite3",
                      CHAT_PROVIDER="tests.bench.soak.SoakProvider", CHAT_RUN_LOG_TTL="60", CHAT_PROVIDER_MAX_RETRIES="0",
                      CHAT_RATE_LIMIT_PER_MINUTE="100000", DJANGO_SETTINGS_MODULE="config.settings")
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from asgiref.sync import sync_to_async
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from chat.quotas.limits import limiter
    from chat.runs import manager
    from tests.bench.memory import settle
    from tests.resilience.invariants import check_db, db_state_orm

    call_command("migrate", verbosity=0)
    users = [User.objects.create_user(f"soak{i}", password="p") for i in range(args.users)]
    tokens = [Token.objects.create(user=u).key for u in users]

    async def go() -> dict[str, Any]:
        stats: Counter[str] = Counter()
        acked: list[tuple[int, str]] = []
        start = time.monotonic()
        deadline = start + args.seconds
        tasks_before = len(asyncio.all_tasks())
        loops = [asyncio.create_task(user_loop(t, u.pk, deadline, args.seed + i, stats, acked)) for i, (t, u) in enumerate(zip(tokens, users, strict=True))]
        samples: list[tuple[float, int]] = []
        while not all(t.done() for t in loops):
            await asyncio.sleep(min(30.0, max(1.0, args.seconds / 60)))
            samples.append((round(time.monotonic() - start, 1), settle()))
        for t in loops:
            t.result()  # an invariant failure raises here
        await asyncio.sleep(3)  # the last runs finish and their followers end
        warm = [rss for at, rss in samples if at >= args.seconds / 5]
        spread = (max(warm) - min(warm)) / min(warm) if warm else 0.0
        state = await sync_to_async(db_state_orm)()
        await sync_to_async(check_db)(state, acked=acked)
        # the process's own heartbeat task stays (one per process, by design); anything else is a leak
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and t is not manager._background]
        return {
            "seconds": args.seconds, "users": args.users, "turns": dict(stats), "acknowledged": len(acked),
            "rss_samples_mb": [(at, round(r / 2**20, 1)) for at, r in samples],
            "rss_spread_after_warmup": round(spread, 3), "tasks_before": tasks_before, "tasks_after": len(left),
            "task_names_after": sorted({t.get_name().split(":")[0] for t in left}),
            "open_sockets": sum(limiter.open_sockets(u.pk) for u in users), "running_runs": len(manager.running_ids()),
            "invariants": "hold",
        }

    figures = asyncio.run(go())
    print(json.dumps(figures))
    ok = (figures["rss_spread_after_warmup"] <= 0.10 and figures["open_sockets"] == 0 and figures["running_runs"] == 0
          and figures["tasks_after"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
