"""A real scale-out deployment for tests: PostgreSQL database of its own, a redis-server of its own, a fake
Anthropic server process and several daphne processes; plain websocket / SSE / HTTP clients for it.
Everything listens on 127.0.0.1 and is stopped and removed by `close()`."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

from tests.protocol import check_http, check_wire

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not come up within {timeout} s")


class Cluster:
    def __init__(self, *, daphne_env: dict[str, str] | None = None) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="chat-cluster-"))
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}
        base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
        if not base.startswith("postgres"):
            base = "postgres://postgres@127.0.0.1:5432/test"
        parsed = urlparse(base)
        self.db_name = f"chat_resilience_{uuid.uuid4().hex[:10]}"
        self.admin_dsn = urlunparse(parsed._replace(scheme="postgresql", path="/postgres"))
        self.database_url = urlunparse(parsed._replace(path=f"/{self.db_name}"))
        self.dsn = urlunparse(parsed._replace(scheme="postgresql", path=f"/{self.db_name}"))
        self.redis_port = free_port()
        self.extra_env = daphne_env or {}
        self.fake_port = 0
        self.tokens: dict[str, str] = {}
        self.user_ids: dict[str, int] = {}

    # ---- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> Cluster:
        import psycopg

        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.db_name}"')
        self.start_redis()
        self.start_fake()
        env = self.env()
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)
        code = ("import json; from django.contrib.auth import get_user_model; from rest_framework.authtoken.models import Token; "
                "U = get_user_model(); out = {}\n"
                "for n in ('ann', 'bob'):\n"
                "    u = U.objects.create_user(username=n, password='pw'); out[n] = [Token.objects.create(user=u).key, u.pk]\n"
                "print('USERS' + json.dumps(out))")
        res = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, check=True, timeout=120, capture_output=True, text=True)
        users = json.loads(res.stdout.split("USERS", 1)[1])
        self.tokens = {n: v[0] for n, v in users.items()}
        self.user_ids = {n: v[1] for n, v in users.items()}
        return self

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "CHAT_"))}
        env.update({
            "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": self.database_url,
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0", "DEBUG": "1", "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "CHAT_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.fake_port}", "ANTHROPIC_API_KEY": "sk-ant-fake",
            "CHAT_HEARTBEAT_INTERVAL": "0.5", "CHAT_STALE_AFTER": "2.5", "CHAT_PROVIDER_STALL_TIMEOUT": "1.5",
            "CHAT_PROVIDER_MAX_RETRIES": "2", "CHAT_PROVIDER_TIMEOUT": "10", "CHAT_RATE_LIMIT_PER_MINUTE": "100000",
            "CHAT_MAX_RUNNING_PER_USER": "100", "CHAT_MAX_SOCKETS_PER_USER": "500", "CHAT_SHUTDOWN_TIMEOUT": "8",
            "CHAT_FLUSH_INTERVAL": "0.25", "LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1",
            "CHAT_REDIS_KEY_PREFIX": os.environ.get("CHAT_REDIS_KEY_PREFIX", "chat:"),  # the test process reads the same keys
        })
        env.update(self.extra_env)
        env.update(extra)
        return env

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = open(self.tmp / f"{name}.log", "ab")
        proc = subprocess.Popen(args, cwd=ROOT, env=env or self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_redis(self) -> None:
        self._spawn("redis", ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--loglevel", "warning"])
        import redis

        _wait(lambda: redis.Redis(port=self.redis_port, socket_timeout=1).ping(), 10, "redis-server")

    def kill_redis(self) -> None:
        self.kill("redis", signal.SIGKILL)

    def start_fake(self) -> None:
        from tests.fakes.anthropic_server import text_response

        script = self.tmp / "fake.json"
        script.write_text(json.dumps({"scenarios": [], "default": text_response(*[f"tok{i} " for i in range(40)], pace=0.01)}))
        proc = self._spawn("fake", [sys.executable, "-m", "tests.fakes.anthropic_server", "--port", "0", "--script", str(script)])
        _wait(lambda: "LISTENING" in (self.tmp / "fake.log").read_text(), 15, "fake Anthropic server")
        self.fake_port = int((self.tmp / "fake.log").read_text().split("LISTENING", 1)[1].split()[0])
        assert proc.poll() is None

    def start_daphne(self, name: str, **extra_env: str) -> int:
        port = free_port()
        self._spawn(name, [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"], self.env(**extra_env))
        self.ports[name] = port
        _wait(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=2).status == 200, 30, f"daphne {name}")
        return port

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.get(name)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)
            if sig == signal.SIGKILL:
                proc.wait(10)

    def alive(self, name: str) -> bool:
        proc = self.procs.get(name)
        return proc is not None and proc.poll() is None

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.tmp / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def close(self) -> None:
        for name, proc in list(self.procs.items()):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(10)
        try:
            import psycopg

            with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
        except Exception as exc:  # pragma: no cover - reported, never hides a test failure
            print(f"could not drop {self.db_name}: {exc}")

    # ---- the fake model ------------------------------------------------------------------------------

    def fake_post(self, path: str, body: Any) -> Any:
        req = urllib.request.Request(f"http://127.0.0.1:{self.fake_port}{path}", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
        return json.loads(urllib.request.urlopen(req, timeout=5).read())

    def fake_enqueue(self, *scenarios: dict[str, Any]) -> None:
        self.fake_post("/_fake/scenarios", list(scenarios))

    def fake_requests(self) -> list[dict[str, Any]]:
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.fake_port}/_fake/requests", timeout=5).read())

    # ---- clients ---------------------------------------------------------------------------------------

    async def ws(self, name: str, user: str = "ann") -> Any:
        import websockets

        return await websockets.connect(f"ws://127.0.0.1:{self.ports[name]}/ws/chat/", open_timeout=5, max_size=2**23,
                                        additional_headers={"Authorization": f"Token {self.tokens[user]}"})

    async def http(self, name: str, method: str, path: str, user: str = "ann", body: Any = None,
                   headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        def call() -> tuple[int, bytes]:
            data = json.dumps(body).encode() if body is not None else None
            req = urllib.request.Request(f"http://127.0.0.1:{self.ports[name]}{path}", data=data, method=method, headers={
                "Authorization": f"Token {self.tokens[user]}", "content-type": "application/json", **(headers or {})})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as e:
                return e.code, e.read()

        status, raw = await asyncio.to_thread(call)
        if path.startswith("/api/chat") and raw[:1] == b"{":
            check_http(status, raw)  # POST /api/chat's body or an error body, against the committed schema
        return status, raw

    async def sse(self, name: str, path: str, user: str = "ann", last_event_id: str | None = None,
                  budget: int = 10**9, timeout: float = 20) -> list[tuple[str | None, dict[str, Any]]]:
        """GET an SSE stream and read up to `budget` events, then hang up."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.ports[name])
        head = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{self.ports[name]}", f"Authorization: Token {self.tokens[user]}",
                "Accept: text/event-stream", "Connection: close"]
        if last_event_id:
            head.append(f"Last-Event-ID: {last_event_id}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        out: list[tuple[str | None, dict[str, Any]]] = []
        try:
            async with asyncio.timeout(timeout):
                status_and_headers = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
                chunked = "transfer-encoding: chunked" in status_and_headers
                buf = b""
                while len(out) < budget:
                    if chunked:
                        size = int((await reader.readline()).strip() or b"0", 16)
                        if size == 0:
                            break
                        data = (await reader.readexactly(size + 2))[:-2]
                    else:
                        data = await reader.read(65536)
                        if not data:
                            break
                    buf += data
                    while b"\n\n" in buf and len(out) < budget:
                        block, buf = buf.split(b"\n\n", 1)
                        ident, payload = None, None
                        for line in block.decode().splitlines():
                            if line.startswith("id: "):
                                ident = line[4:]
                            elif line.startswith("data: "):
                                payload = check_wire(line[6:])
                        if payload is not None:
                            out.append((ident, payload))
        finally:
            writer.close()
        return out
