"""Across processes (Redis channel layer, shared database): revoking in this process closes a socket that a
separate daphne process holds - at once through the ring, and by that process's own periodic re-check."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from channels.db import database_sync_to_async
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from chat.api.auth import CLOSE_TOKEN_REVOKED, CLOSE_USER_INACTIVE
from tests.conftest import token_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]
ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    """The URL of the database this test runs on (the test database), for the server process."""
    db = django_settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def other_process(tmp_path: Path, settings: Any) -> Iterator[Any]:
    """Factory: a daphne process on this test's database and Redis; returns its websocket URL."""
    if not os.environ.get("REDIS_URL"):
        pytest.skip("needs REDIS_URL (a shared channel layer)")
    procs: list[subprocess.Popen[bytes]] = []

    def start(**extra: str) -> str:
        port = _free_port()
        env = {**os.environ, "DATABASE_URL": _database_url(), "DEBUG": "1", "ALLOWED_HOSTS": "127.0.0.1",
               "CHAT_PROVIDER": "offline", "PYTHONUNBUFFERED": "1", **extra}
        env.pop("SQLITE_TEST_NAME", None)
        log = open(tmp_path / f"daphne-{port}.log", "wb")
        proc = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                                 "config.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/", timeout=2)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / f"daphne-{port}.log").read_text()
                time.sleep(0.2)
        return f"ws://127.0.0.1:{port}/ws/chat/"

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=15)


async def _closed_code(ws: Any, timeout: float) -> int | None:
    with pytest.raises(websockets.ConnectionClosed):
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    return ws.close_code


async def test_token_deleted_here_closes_the_socket_there_at_once(user: Any, other_process: Any) -> None:
    url = other_process(CHAT_AUTH_RECHECK_INTERVAL="120")  # only the ring through Redis can be this quick
    key = await database_sync_to_async(token_for)(user)
    async with websockets.connect(url, additional_headers={"Authorization": f"Token {key}"}) as ws:
        await asyncio.sleep(0.5)
        started = time.monotonic()
        await Token.objects.filter(key=key).adelete()
        assert await _closed_code(ws, 5) == CLOSE_TOKEN_REVOKED
        assert time.monotonic() - started < 5


async def test_user_deactivated_without_signals_is_caught_by_the_other_process(user: Any, other_process: Any) -> None:
    url = other_process(CHAT_AUTH_RECHECK_INTERVAL="1")
    key = await database_sync_to_async(token_for)(user)
    async with websockets.connect(url, additional_headers={"Authorization": f"Token {key}"}) as ws:
        await asyncio.sleep(0.3)
        await get_user_model().objects.filter(pk=user.pk).aupdate(is_active=False)  # no signal, no ring
        assert await _closed_code(ws, 5) == CLOSE_USER_INACTIVE
