"""/healthz and /readyz: JSON, the right status codes, cheap; /readyz follows a real Redis going away and coming back."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from chat.conf import chat_settings
from tests.e2e.conftest import free_port


@pytest.mark.django_db(transaction=True)
async def test_healthz_and_readyz_embedded(async_client: Any) -> None:
    """Alive, and ready: database, migrations, the run log (and Redis, when one is configured)."""
    alive = await async_client.get("/healthz")
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    assert "no-cache" in alive["Cache-Control"]
    ready = await async_client.get("/readyz")
    assert ready.status_code == 200, ready.content
    body = ready.json()
    expected = {"database", "migrations", "run_log"} | ({"redis"} if chat_settings.CHAT_REDIS_URL else set())
    assert body["status"] == "ok" and set(body["checks"]) == expected
    assert all(c["ok"] for c in body["checks"].values())
    assert (await async_client.post("/readyz")).status_code == 405


@pytest.mark.django_db(transaction=True)
async def test_readyz_reports_unapplied_migrations(async_client: Any, monkeypatch: Any) -> None:
    from chat.ops import views as ops

    monkeypatch.setattr(ops, "_migrated", False)
    from django.db.migrations.executor import MigrationExecutor

    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [("chat", "0002_not_applied")])
    response = await async_client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["migrations"] == {"ok": False, "error": "RuntimeError", "ms": response.json()["checks"]["migrations"]["ms"]}


class RedisProcess:
    """A throwaway redis-server on a free port (never the machine's shared one)."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    redis = RedisProcess(tmp_path)
    redis.start()
    yield redis
    redis.stop()


@pytest.mark.django_db(transaction=True)
async def test_readyz_follows_redis(async_client: Any, throwaway_redis: RedisProcess) -> None:
    """With CHAT_REDIS_URL: 200 while Redis answers, 503 (naming redis and the run log) once it is stopped, 200 again
    when it is back on the same port - each answer within the probe's 1 s."""
    from chat.runs import manager

    with override_settings(CHAT_REDIS_URL=throwaway_redis.url):
        manager._loop = None  # the run-log backend is chosen per event loop: pick up the Redis one
        try:
            first = await async_client.get("/readyz")
            assert first.status_code == 200, first.content
            assert set(first.json()["checks"]) == {"database", "migrations", "run_log", "redis"}

            throwaway_redis.stop()
            started = time.monotonic()
            down = await async_client.get("/readyz")
            assert time.monotonic() - started < 1.0
            assert down.status_code == 503, down.content
            body = down.json()
            assert body["status"] == "unavailable"
            assert not body["checks"]["redis"]["ok"] and not body["checks"]["run_log"]["ok"]
            assert body["checks"]["database"]["ok"]
            assert str(throwaway_redis.port) not in down.content.decode()  # no URLs or messages, only class names

            throwaway_redis.start()
            deadline = time.monotonic() + 10
            while True:  # the clients reconnect on their next command
                back = await async_client.get("/readyz")
                if back.status_code == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert back.status_code == 200, back.content
            assert all(c["ok"] for c in back.json()["checks"].values())
        finally:
            manager._loop = None
