"""Side effects at most once, with a real server process killed by SIGKILL in the middle of a tool call.

The tool counts its own executions in a file (across processes). After the kill, another server process
takes over the same database: a resume, a resend of the same message (a client's retry) and the next
message all leave the count at 1, the call is reported `interrupted`, and the model is told so."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import websockets

from tests.protocol import check_wire

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("complete", "error", "cancelled")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self.log = log
        out = open(log, "ab")
        self.proc = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(self.port),
                                      "config.asgi:application"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        deadline = time.monotonic() + 40
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/", timeout=2)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                assert self.proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/chat/"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


async def _until(ws: Any, types: tuple[str, ...], timeout: float = 30) -> list[dict[str, Any]]:
    events = []
    while True:
        ev = check_wire(await asyncio.wait_for(ws.recv(), timeout))
        events.append(ev)
        if ev["type"] in types:
            return events


def _run_status(db: Path, run_id: str) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return str(con.execute("SELECT status FROM pagechat_run WHERE id = ?", (run_id.replace("-", ""),)).fetchone()[0])
    finally:
        con.close()


def test_a_tool_killed_mid_call_is_never_run_again(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    counter = tmp_path / "executions.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CHAT_PROVIDER", "SQLITE_TEST_NAME")}
    env.update(DATABASE_URL=f"sqlite:///{db}", DEBUG="1", ALLOWED_HOSTS="127.0.0.1", PYTHONUNBUFFERED="1",
               CHAT_PROVIDER="tests.hardening.once_provider.OnceProvider", ONCE_COUNTER=str(counter),
               CHAT_HEARTBEAT_INTERVAL="0.5", CHAT_STALE_AFTER="2", CHAT_GRACEFUL_SHUTDOWN="0")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=180)
    made = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                           "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token; "
                           "print(Token.objects.create(user=User.objects.create_user('payer', password='p')).key)"],
                          cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=120)
    headers = {"Authorization": f"Token {made.stdout.strip().splitlines()[-1]}"}
    send = {"type": "chat.send", "client_message_id": "charge-1", "conversation_id": None, "message": "charge me 5", "context": {}}
    first = Server(env, tmp_path / "a.log")
    second: Server | None = None
    try:
        async def start_and_kill() -> tuple[str, int, int]:
            async with websockets.connect(first.url, additional_headers=headers) as ws:
                await ws.send(json.dumps(send))
                events = await _until(ws, ("tool_start",))
                deadline = time.monotonic() + 20
                while not (counter.exists() and counter.read_text().strip()):
                    assert time.monotonic() < deadline, "the tool never ran"
                    await asyncio.sleep(0.05)
                first.proc.send_signal(signal.SIGKILL)  # mid-call: the tool is sleeping after counting itself
                first.proc.wait(timeout=10)
                return events[0]["run_id"], events[0]["conversation_id"], events[-1]["seq"]

        run_id, conversation_id, last_seq = asyncio.run(start_and_kill())
        assert len(counter.read_text().splitlines()) == 1
        second = Server(env, tmp_path / "b.log")

        async def take_over() -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
            async with websockets.connect(second.url, additional_headers=headers) as ws:
                deadline = time.monotonic() + 30
                while _run_status(db, run_id) == "running":  # the new process sweeps the dead owner's run
                    assert time.monotonic() < deadline, "the dead owner's run was never swept"
                    await asyncio.sleep(0.2)
                await ws.send(json.dumps({"type": "chat.resume", "run_id": run_id, "after_seq": 0}))
                resumed = (await _until(ws, TERMINAL))[-1]
                await ws.send(json.dumps(send))  # the client's retry of the very same message
                retried = (await _until(ws, TERMINAL))[-1]
                await ws.send(json.dumps({**send, "client_message_id": "next-1", "conversation_id": conversation_id,
                                          "message": "are you there?"}))
                following = await _until(ws, TERMINAL)
                return resumed, retried, following

        resumed, retried, following = asyncio.run(take_over())
        assert resumed["run_id"] == run_id and resumed["type"] == "error" and resumed["code"] == "interrupted"
        assert retried["run_id"] == run_id and retried["type"] == "error" and retried["code"] == "interrupted"
        assert following[-1]["type"] == "complete"
        time.sleep(1.0)
        assert counter.read_text().splitlines() == [counter.read_text().splitlines()[0]], "the tool ran again"
        con = sqlite3.connect(db)
        try:
            calls = con.execute("SELECT status, tool_use_id, error FROM pagechat_toolcall WHERE name = 'charge_card'").fetchall()
            diagnostics = con.execute("SELECT diagnostics FROM pagechat_run ORDER BY created_at DESC LIMIT 1").fetchone()[0]
        finally:
            con.close()
        assert calls == [("interrupted", "toolu_charge", calls[0][2])], calls  # recorded before it ran, reported interrupted
        messages = json.loads(diagnostics)["messages"]
        results = [b for m in messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"]
        assert [r["tool_use_id"] for r in results] == ["toolu_charge"]
        assert results[0]["is_error"] and "not run again" in results[0]["content"]
    finally:
        first.stop()
        if second is not None:
            second.stop()
