"""What one database job's thread round trip costs, with no database work: `python -m tests.bench.hop [--uvloop]`.

A turn runs three jobs on `chat.infra.db_threads` threads (admission, plan, final save): each is a hand-off from the event
loop to a thread and back. This times that hand-off alone (a job that does nothing), as CPU of the whole process
per round trip, so the fixed cost of a turn can be read against it."""
from __future__ import annotations

import argparse
import asyncio
import os
import time

import django


def _noop() -> None:
    return None


async def _measure(rounds: int) -> tuple[float, float]:
    from chat.infra.db_threads import DbThread

    thread = DbThread("bench-hop")
    job = thread.run(_noop)
    for _ in range(1000):  # warm-up: the thread exists, the code paths are hot
        await job()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        await job()
    return (time.process_time() - cpu) / rounds * 1e6, (time.perf_counter() - wall) / rounds * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20_000)
    ap.add_argument("--uvloop", action="store_true", help="on uvloop's event loop (uvicorn's)")
    args = ap.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    if args.uvloop:
        import uvloop

        uvloop.install()
    cpu_us, wall_us = asyncio.run(_measure(args.rounds))
    print(f"one database thread round trip with no work: {cpu_us:.1f} us of process CPU, {wall_us:.1f} us wall "
          f"({args.rounds} rounds, {'uvloop' if args.uvloop else 'asyncio'} event loop)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
