"""Memory per retained finished answer: RSS of a clean process serving long answers from the benchmark model.

    python -m tests.bench.memory [--answers 3] [--tokens 200000] [--ttl 4]

Runs in its own process (a fresh SQLite database in a temporary directory, the in-memory run log unless
REDIS_URL is set), drives long answers through the real websocket consumer, and prints JSON: the baseline
RSS after a warm-up turn, the RSS after each finished answer (its client gone), the growth per answer as a
multiple of the answer's text, and the RSS once the run-log TTL has passed. tests/hardening/test_memory.py
runs it and checks growth <= 3x the text per answer and the end within 10% of the baseline.
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rss() -> int:
    """This process's resident set size in bytes (from /proc)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def settle() -> int:
    """Collect garbage and give freed heap back to the OS where the C library can, then read RSS."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return rss()


async def turn(token: str, message: str) -> tuple[str, int]:
    """One turn over the real consumer; returns its run id and the length of its answer."""
    from channels.testing import WebsocketCommunicator

    from config.asgi import application

    comm = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"authorization", f"Token {token}".encode()), (b"host", b"testserver")])
    ok, _ = await comm.connect(timeout=10)
    assert ok
    await comm.send_to(text_data=json.dumps({"type": "chat.send", "client_message_id": os.urandom(8).hex(),
                                             "conversation_id": None, "message": message, "context": {}}))
    while True:
        frame = json.loads(await comm.receive_from(timeout=600))
        if frame["type"] in ("complete", "error", "cancelled") and "seq" in frame:
            break
    await comm.disconnect()
    assert frame["type"] == "complete", frame
    return frame["run_id"], len(frame["payload"]["message"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--ttl", type=float, default=4.0)
    parser.add_argument("--warm", action="store_true", help="baseline after one long answer has come and gone")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="pagechat-memory-")
    os.environ.update(DEBUG="0", SECRET_KEY=os.environ.get("SECRET_KEY") or "memory-measurement-" + "k" * 40, ALLOWED_HOSTS="testserver")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/db.sqlite3")
    os.environ.update(CHAT_PROVIDER="tests.bench.provider.BenchProvider", CHAT_RUN_LOG_TTL=str(args.ttl),
                      CHAT_RATE_LIMIT_PER_MINUTE="10000", DJANGO_SETTINGS_MODULE="config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=User.objects.create_user("mem", password="p")).key

    async def go() -> dict[str, object]:
        await turn(token, "bench:tokens=2000")  # warm-up: imports, caches, the first connections
        cold = settle()
        if args.warm:  # a server that has already served a long answer (its run since expired): the allocator's
            await turn(token, f"bench:tokens={args.tokens}")  # arenas have grown once, as in any running server
            await asyncio.sleep(args.ttl + 1.5)
        baseline = settle()
        after: list[int] = []
        sizes: list[int] = []
        for _ in range(args.answers):
            _, size = await turn(token, f"bench:tokens={args.tokens}")
            sizes.append(size)
            await asyncio.sleep(0.5)  # writers and flushes settle
            after.append(settle())
        retained = (after[-1] - baseline) / args.answers
        await asyncio.sleep(args.ttl + 2.0)  # past the last run's retention
        from chat.runs import manager

        end = settle()
        return {
            "answers": args.answers, "answer_chars": sizes, "warm": args.warm, "cold_rss": cold, "baseline_rss": baseline, "rss_after_each": after,
            "growth_per_answer": retained, "growth_per_answer_x_text": round(retained / (sum(sizes) / len(sizes)), 2),
            "rss_after_ttl": end, "after_ttl_vs_baseline": round((end - baseline) / baseline, 3),
            "handles_left": len(manager.handles),
        }

    print(json.dumps(asyncio.run(go())))


if __name__ == "__main__":
    main()
