"""Real daphne and uvicorn processes: a websocket frame over CHAT_MAX_FRAME_BYTES gets `too_large` and a clean close
1009, whatever its size (daphne's own 1 MiB limit used to drop such sockets with 1006 and no reason; uvicorn's own
16 MiB limit closed with 1009 and no frame)."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.bench.server import SERVER_COMMANDS
from tests.protocol import check_wire

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module", params=sorted(SERVER_COMMANDS))
def ws_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("frame_limit")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CHAT_PROVIDER", "SQLITE_TEST_NAME")}
    env.update(DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}", DEBUG="1", ALLOWED_HOSTS="127.0.0.1", CHAT_PROVIDER="offline",
               CHAT_OFFLINE_DELAY="0", PYTHONUNBUFFERED="1")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=180)
    made = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                           "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token; "
                           "print(Token.objects.create(user=User.objects.create_user('u', password='p')).key)"],
                          cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=120)
    token = made.stdout.strip().splitlines()[-1]
    port = free_port()
    log = open(tmp / f"{request.param}.log", "wb")
    # as production runs them (docs/deployment.md)
    command = [sys.executable, *(arg.format(port=port, app="config.asgi:application") for arg in SERVER_COMMANDS[request.param])]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/", timeout=2)
        except urllib.error.HTTPError:
            break  # answered (401 without a token)
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError((tmp / f"{request.param}.log").read_text()) from None
            time.sleep(0.2)
        else:
            break
    yield f"ws://127.0.0.1:{port}/ws/chat/", token
    proc.terminate()
    proc.wait(timeout=15)
    log.close()


@pytest.mark.parametrize("size", [64 * 1024 + 1, 900 * 1024, 17 * 1024 * 1024])
def test_oversized_frame_gets_too_large_then_close_1009(ws_server: Any, size: int) -> None:
    url, token = ws_server

    async def go() -> tuple[dict[str, Any], int | None]:
        async with websockets.connect(url, additional_headers={"Authorization": f"Token {token}"}, max_size=None) as ws:
            frame = json.dumps({"type": "chat.send", "client_message_id": "c", "conversation_id": None, "message": "x", "context": {}})
            try:
                await ws.send(frame[:-1] + ', "pad": "' + "p" * size + '"}')
            except websockets.ConnectionClosed:
                pass  # the server closed while the rest was still being written; what it sent first is still read
            error = check_wire(await asyncio.wait_for(ws.recv(), 10))
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
            return error, ws.close_code

    error, code = asyncio.run(go())
    assert error["type"] == "error" and error["code"] == "too_large", error
    assert code == 1009


def test_frames_under_the_limit_still_work(ws_server: Any) -> None:
    url, token = ws_server

    async def go() -> list[dict[str, Any]]:
        async with websockets.connect(url, additional_headers={"Authorization": f"Token {token}"}) as ws:
            await ws.send(json.dumps({"type": "chat.send", "client_message_id": "ok", "conversation_id": None,
                                      "message": "hello " + "y" * 10_000, "context": {}}))
            events = []
            while True:
                ev = check_wire(await asyncio.wait_for(ws.recv(), 20))
                events.append(ev)
                if ev["type"] in ("complete", "error", "cancelled"):
                    return events

    assert asyncio.run(go())[-1]["type"] == "complete"
