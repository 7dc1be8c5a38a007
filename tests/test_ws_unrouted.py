"""A websocket to a path nobody routes, against real daphne and uvicorn processes (production settings, JSON logs):
the handshake is refused (403), the server logs one line about it and no traceback (Channels' router used to raise
ValueError: HTTP 500 and a traceback per attempt). For the demo (`config.asgi`) and for a host that mounts the API at
/assistant/ with README's ASGI entry (tests.chat.mounted_asgi), whose websocket is only /assistant/ws/."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.bench.server import ROOT, Server

# app -> (its settings, the paths it serves a websocket at, paths it does not)
APPS = {
    "config.asgi:application": ("config.settings", ["/api/ws/", "/ws/chat/"], ["/ws/nope/", "/assistant/ws/", "/api/ws/x/"]),
    "tests.chat.mounted_asgi:application": ("tests.chat.mounted_host", ["/assistant/ws/"], ["/ws/chat/", "/api/ws/", "/ws/nope/"]),
}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str, Path]:
    """A migrated database with one token user; production settings (DEBUG off, JSON logs)."""
    tmp_path = tmp_path_factory.mktemp("ws_unrouted")
    env = {"DEBUG": "0", "SECRET_KEY": "test-only-secret-" + "x" * 40, "ALLOWED_HOSTS": "127.0.0.1", "LOG_FORMAT": "json",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REDIS_URL": "", "CHAT_PROVIDER": "chat.providers.offline.OfflineProvider",
           "PYTHONUNBUFFERED": "1"}
    run_env = {**os.environ, **env}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=run_env, check=True, timeout=300,
                   capture_output=True)
    out = subprocess.run([sys.executable, "-m", "tests.bench.dbsetup", "users", "1"], cwd=ROOT, env=run_env, check=True,
                         timeout=120, capture_output=True, text=True).stdout
    return env, json.loads(out.splitlines()[-1])["tokens"][0], tmp_path


async def _handshake(url: str, token: str) -> int:
    """101 when the websocket opens, else the HTTP status the handshake was answered with."""
    try:
        async with asyncio.timeout(15), connect(url, additional_headers={"Authorization": f"Token {token}"}, open_timeout=10):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


@pytest.mark.parametrize("app", sorted(APPS), ids=["demo", "host at /assistant/"])
@pytest.mark.parametrize("server", ["daphne", "uvicorn"])
def test_an_unrouted_websocket_is_refused_at_the_handshake(server: str, app: str, prepared: tuple[dict[str, str], str, Path]) -> None:
    env, token, tmp_path = prepared
    settings, routed, unrouted = APPS[app]
    name = f"{server}-{app.split(':')[0]}"
    srv = Server(name, app, {**env, "DJANGO_SETTINGS_MODULE": settings}, tmp_path / "logs", server=server).start()
    try:
        base = f"ws://127.0.0.1:{srv.port}"
        refused = {p: asyncio.run(_handshake(base + p, token)) for p in unrouted}
        served = {p: asyncio.run(_handshake(base + p, token)) for p in routed}  # the same token where a websocket is served
    finally:
        srv.stop()
    log = (tmp_path / "logs" / f"{name}.log").read_text()
    assert served == dict.fromkeys(routed, 101), (served, log[-3000:])
    assert refused == dict.fromkeys(unrouted, 403), (refused, log[-3000:])
    assert "Traceback" not in log and "No route found" not in log, log[-3000:]
    for path in unrouted:
        lines = [line for line in log.splitlines() if path in line]
        assert len(lines) <= 1, lines
        assert all(json.loads(line)["level"] == "WARNING" for line in lines), lines  # a client's mistake, not an ERROR


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("path", "root_path"), [("/ws/nope/", ""), ("/api/ws/", "/assistant")])
async def test_a_path_outside_the_routes_or_the_root_path_is_refused_in_process(settings: Any, caplog: Any, user: Any, path: str,
                                                                                root_path: str) -> None:
    """Also a path outside the server's `root_path` (daphne --root-path), which Channels' router refuses before its
    routes; with a valid token, so that only the path is wrong."""
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator

    from chat.asgi import websocket_application
    from tests.conftest import token_for

    settings.CHAT_GC_FREEZE = False
    token = await database_sync_to_async(token_for)(user)
    comm = WebsocketCommunicator(websocket_application(), path, headers=[(b"authorization", f"Token {token}".encode())])
    comm.scope["root_path"] = root_path
    with caplog.at_level(logging.WARNING):
        connected, _ = await comm.connect(timeout=5)
    assert not connected
    assert [(r.name, r.levelno, r.exc_info) for r in caplog.records] == [("chat.asgi", logging.WARNING, None)]
