"""The production ASGI servers: `config.asgi:application` on uvicorn (the recommended production server) and on
daphne (runserver's, still supported) serves a websocket turn, an SSE turn and the static files, as deployed."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.bench.server import ROOT, Server
from tests.protocol import check_wire

TERMINAL = {"complete", "error", "cancelled"}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str, Path]:
    """One migrated database with a token user and one collectstatic, shared by both servers."""
    tmp_path = tmp_path_factory.mktemp("servers")
    env = {"DEBUG": "0", "SECRET_KEY": "test-only-secret-" + "x" * 40, "ALLOWED_HOSTS": "127.0.0.1",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REDIS_URL": "", "STATIC_ROOT": str(tmp_path / "static"),
           "CHAT_PROVIDER": "chat.providers.offline.OfflineProvider"}
    run_env = {**os.environ, **env}
    for args in (["manage.py", "migrate", "--noinput", "-v", "0"], ["manage.py", "collectstatic", "--noinput", "-v", "0"]):
        subprocess.run([sys.executable, *args], cwd=ROOT, env=run_env, check=True, timeout=300, capture_output=True)
    out = subprocess.run([sys.executable, "-m", "tests.bench.dbsetup", "users", "1"], cwd=ROOT, env=run_env, check=True,
                         timeout=120, capture_output=True, text=True).stdout
    return env, json.loads(out.splitlines()[-1])["tokens"][0], tmp_path


async def _ws_turn(port: int, token: str, message: str = "hello", on_first: Any = None) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    async with connect(f"ws://127.0.0.1:{port}/api/ws/", additional_headers={"Authorization": f"Token {token}"}) as ws:
        await ws.send(json.dumps({"type": "chat.send", "client_message_id": str(uuid.uuid4()), "conversation_id": None,
                                  "message": message, "context": {}}))
        async with asyncio.timeout(30):
            while not events or events[-1]["type"] not in TERMINAL:
                events.append(check_wire(await ws.recv()))
                if on_first is not None and events[-1]["type"] == "text_delta":
                    on_first()
                    on_first = None
    return events


def _sse_turn(port: int, token: str) -> list[dict[str, object]]:
    body = json.dumps({"client_message_id": str(uuid.uuid4()), "conversation_id": None, "message": "hello", "context": {}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/chat/stream", data=body, method="POST",
                                 headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        raw = r.read().decode()
    return [check_wire(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize("server", ["uvicorn", "daphne"])
def test_production_server_serves_a_turn_sse_and_static_files(server: str, prepared: tuple[dict[str, str], str, Path]) -> None:
    env, token, tmp_path = prepared
    srv = Server(server, "config.asgi:application", env, tmp_path / "logs", server=server).start()
    try:
        events = asyncio.run(_ws_turn(srv.port, token))
        assert events[-1]["type"] == "complete", events[-1]
        sse = _sse_turn(srv.port, token)
        assert sse[-1]["type"] == "complete", sse[-1]
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/static/chat/tray.js", timeout=10) as r:
            assert r.status == 200 and "javascript" in r.headers["Content-Type"]
            assert r.read() == (tmp_path / "static" / "chat" / "tray.js").read_bytes()
    finally:
        srv.stop()
    log = (tmp_path / "logs" / f"{server}.log").read_text()
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.parametrize("server", ["uvicorn", "daphne"])
def test_sigterm_lets_the_running_answer_finish(server: str, prepared: tuple[dict[str, str], str, Path]) -> None:
    """A deploy's SIGTERM mid-answer: the run finishes (within CHAT_SHUTDOWN_TIMEOUT), then the server exits cleanly."""
    env, token, tmp_path = prepared
    env = {**env, "CHAT_PROVIDER": "tests.bench.provider.BenchProvider"}
    srv = Server(f"{server}-term", "config.asgi:application", env, tmp_path / "logs", server=server).start()
    assert srv.proc is not None
    try:
        events = asyncio.run(_ws_turn(srv.port, token, "bench:tokens=40,rate=20", on_first=lambda: srv.proc.send_signal(signal.SIGTERM)))
        assert events[-1]["type"] == "complete", events[-1]
        # uvicorn re-raises the signal it handled once it has shut down (exit status -15): a clean stop either way
        assert srv.proc.wait(timeout=20) in (0, -signal.SIGTERM)
    finally:
        srv.stop()
    assert "Traceback" not in (tmp_path / "logs" / f"{server}-term.log").read_text()
