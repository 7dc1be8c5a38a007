"""A server gives memory back: RSS per retained finished answer and after the run-log TTL, measured from outside real
daphne and uvicorn processes (tests/bench/memory.py: production settings, MALLOC_ARENA_MAX=2, a websocket client in
another process, RSS from /proc/<pid>/status; nothing in the measuring process touches the server's memory).

The figure is `slow` (minutes): `pytest -m slow tests/hardening/test_memory.py`. The default run checks what it rests
on: a finished turn is freed by reference counting alone (no cycle waits for a full collection an idle server may
never run), and a long answer's events reach the client over daphne (whose message limit once applied to sends too).
"""
from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from chat.infra.db_threads import RUNS
from chat.providers import scripted as s
from chat.runs import manager
from chat.turns.work import LONG_ANSWER
from tests.bench import memory as bench
from tests.bench.server import Server
from tests.conftest import ws_connect

ROOT = Path(__file__).resolve().parents[2]


def measure(*args: str) -> list[dict[str, Any]]:
    """The bench's figures, one per server (it runs the servers; this process only reads its output)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SQLITE_TEST_NAME", "CHAT_PROVIDER")}
    done = subprocess.run([sys.executable, "-m", "tests.bench.memory", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = [json.loads(line) for line in done.stdout.strip().splitlines()]
    print(json.dumps(figures))
    return figures


@pytest.mark.slow
def test_rss_per_retained_answer_and_after_the_ttl_on_daphne_and_uvicorn() -> None:
    figures = measure("--servers", "daphne,uvicorn", "--answers", "4", "--tokens", "200000")
    assert [f["server"] for f in figures] == ["daphne", "uvicorn"]
    for f in figures:
        assert f["replayed_while_retained"], f  # the four answers were all retained when their RSS was read
        assert f["resume_after_ttl"] == "resync", f  # and let go after the TTL
        # from a process that has served one long answer before, and from one that has not
        assert f["growth_x_text"] <= 3.0 and f["growth_x_text_from_cold"] <= 3.0, f
        assert f["after_ttl_vs_baseline"] <= 0.10 and f["after_ttl_vs_cold"] <= 0.10, f


@pytest.mark.django_db(transaction=True)
async def test_a_finished_turn_is_freed_by_reference_counting_alone(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_RUN_LOG_TTL = 0.5
    scripted.enqueue(s.text("a long answer, " * 2000))
    ws, _ = await ws_connect(user)
    assert ws is not None
    gc.disable()  # an idle server may run no full collection for hours: nothing may wait for one
    try:
        await ws.chat("hello")
        first = await ws.recv()
        # while it runs: with a shared (Redis) run log a finished run is let go as soon as its events are written
        handle = manager.local(first["run_id"])
        assert handle is not None and handle.task is not None
        events = [first, *await ws.until_terminal()]
        await ws.close()
        await asyncio.wait({handle.task})  # the turn's task ends (its title saved) after the terminal event
        try:
            held: Any = weakref.ref(handle.events)  # a finished run's events, compacted
        except TypeError:  # a shared (Redis) run log: the handle keeps its plain list only until the log has them all
            held = lambda: None  # noqa: E731  (what is checked then: the manager let go of the run)
        del handle
        await asyncio.sleep(1.0)  # past its CHAT_RUN_LOG_TTL: the run is let go
        assert manager.local(events[-1]["run_id"]) is None
        assert held() is None
    finally:
        gc.enable()


@pytest.mark.django_db(transaction=True)
async def test_a_long_answer_leaves_no_database_buffers_behind(user: Any, scripted: Any) -> None:
    """The runs thread's connection is closed once a long answer is saved (its buffers sized to those rows go with it);
    the next turn connects again."""
    scripted.enqueue(s.text("y " * (LONG_ANSWER // 2 + 10)))
    scripted.enqueue(s.text("short"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    for message in ("long", "short"):
        await ws.chat(message)
        events = await ws.until_terminal()
        assert events[-1]["type"] == "complete"
        handle = manager.local(events[-1]["run_id"])
        assert handle is not None and handle.task is not None
        await asyncio.wait({handle.task})
        open_after = await RUNS.run(lambda: connection.connection is not None)()
        assert open_after == (message == "short"), message
    await ws.close()


@pytest.fixture(scope="module")
def daphne_bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A real daphne process with the benchmark model (production settings) and a user's token."""
    tmp = tmp_path_factory.mktemp("memory_daphne")
    env = bench.server_env(f"sqlite:///{tmp / 'db.sqlite3'}", 60, {})
    bench.manage(env, "manage.py", "migrate", "--noinput")
    token = json.loads(bench.manage(env, "-m", "tests.bench.dbsetup", "users", "1").splitlines()[-1])["tokens"][0]
    server = Server("memory-daphne-frames", "config.asgi:application", env, tmp, server="daphne").start()
    yield server.ws_url, token
    server.stop()


def test_an_answer_larger_than_the_frame_limit_reaches_the_client_over_daphne(daphne_bench: tuple[str, str]) -> None:
    url, token = daphne_bench
    _, text, deltas = asyncio.run(bench.answer(url, token, 20_000))  # a `complete` of ~200 KB, over CHAT_MAX_FRAME_BYTES
    assert len(text) > 64 * 1024 and text == "".join(deltas[k] for k in sorted(deltas))
