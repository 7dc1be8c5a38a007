"""Fixtures for browser tests against the real product: live servers on 127.0.0.1 and Debian's chromium.

A live server is `manage.py runserver --noreload` (daphne's runserver: HTTP, websockets and, with
DEBUG, static files) on a free port, with its own SQLite file made from one migrated + demo_setup
template. Tests read that file with the stdlib sqlite3 module to check what the server stored.
Everything is bounded in time and bound to 127.0.0.1 only.
"""
from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.protocol import ProtocolViolation, check_wire

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]
SETUP_TIMEOUT = 120  # seconds for migrate / demo_setup
START_TIMEOUT = 30  # seconds for a server to answer
STOP_TIMEOUT = 10
# Inherited settings that must not leak into the live servers (each runs on its own SQLite file, no Redis,
# the offline model unless a test picks another provider).
SCRUBBED_ENV = ("DATABASE_URL", "REDIS_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CHAT_PROVIDER", "SQLITE_TEST_NAME")


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if the test process dies without its teardown (e.g. SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(db_path: Path, **overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(
        DATABASE_URL=f"sqlite:///{db_path}",
        DEBUG="True",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        CHAT_PROVIDER="offline",
        CHAT_OFFLINE_DELAY="0.01",
        # Every test logs in as demo: the per-user send limit is not what these tests are about.
        CHAT_RATE_LIMIT_PER_MINUTE="10000",
        CHAT_SHUTDOWN_TIMEOUT="2",
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


def manage(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=SETUP_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


@dataclass
class LiveServer:
    """A running server: its base URL, its database file, and helpers to read what it stored."""

    name: str
    url: str
    db_path: Path
    log_path: Path
    proc: subprocess.Popen[bytes]
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)  # username -> Playwright storage state

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Read the server's database (WAL lets us read while it writes)."""
        con = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def wait_for_row(self, sql: str, *params: Any, timeout: float = 15.0) -> tuple[Any, ...]:
        """The first row of `sql` once there is one (the server may commit just after the browser shows it)."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.query(sql, *params)
            if rows:
                return rows[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no row for {sql!r} {params!r} after {timeout}s")
            time.sleep(0.05)

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_since(self, offset: int) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        process_stop(self.proc, STOP_TIMEOUT)


def process_stop(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM (a server's graceful stop), then SIGKILL after `timeout` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def demo_database(path: Path) -> Path:
    """Migrate a new SQLite database at `path` and load the demo data (users demo/admin/alice, streams, a report)."""
    env = server_env(path)
    manage(["migrate", "--noinput"], env)
    manage(["demo_setup"], env)
    return path


def database_copy(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite database, whatever its journal mode."""
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def wait_until_ready(server: LiveServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"live server {server.name} exited with {server.proc.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.url}/login/", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"live server {server.name} did not answer within {START_TIMEOUT}s:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e_live")


@pytest.fixture(scope="session")
def demo_db(e2e_dir: Path) -> Path:
    """A migrated database with the demo data (users demo/admin/alice, two streams, a report); copied per server."""
    return demo_database(e2e_dir / "template.sqlite3")


@pytest.fixture(scope="session")
def start_live_server(e2e_dir: Path, demo_db: Path) -> Iterator[Callable[..., LiveServer]]:
    """Factory: start_live_server(name, **env) -> a ready LiveServer on its own copy of the demo database."""
    servers: list[LiveServer] = []

    def start(name: str, **env: str) -> LiveServer:
        db_path = e2e_dir / f"{name}.sqlite3"
        database_copy(demo_db, db_path)
        for attempt in range(3):  # another process may take the free port before the server binds it
            port = free_port()
            log_path = e2e_dir / f"{name}.log"
            log = open(log_path, "wb")  # noqa: SIM115 - the server process owns it until it stops
            proc = subprocess.Popen(
                [PYTHON, "manage.py", "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{port}"],
                cwd=ROOT, env=server_env(db_path, **env), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - only calls prctl
            )
            log.close()
            server = LiveServer(name, f"http://127.0.0.1:{port}", db_path, log_path, proc)
            servers.append(server)
            FRAMES.product_ports.add(port)
            try:
                wait_until_ready(server)
            except RuntimeError:
                if attempt == 2 or "already in use" not in server.log_tail():
                    raise
                continue
            return server
        raise AssertionError("unreachable")

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def site_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo site with a quick offline model."""
    return start_live_server("site", CHAT_OFFLINE_DELAY="0.01")


@pytest.fixture(scope="session")
def slow_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo site with a slow offline model, so a reply is still streaming while a test acts on it."""
    return start_live_server("slow", CHAT_OFFLINE_DELAY="0.12")


@pytest.fixture(scope="session")
def hostile_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo site whose model answers with hostile markdown/HTML (tests/e2e/hostile_provider.py)."""
    return start_live_server("hostile", CHAT_PROVIDER="tests.e2e.hostile_provider.HostileProvider", CHAT_OFFLINE_DELAY="0.005")


@dataclass
class FrameCheck:
    """Every websocket frame a browser receives from a live product server, validated against the protocol schema."""

    product_ports: set[int] = field(default_factory=set)
    validated: int = 0
    violations: list[str] = field(default_factory=list)

    def received(self, url: str, payload: str | bytes) -> None:
        if urllib.parse.urlsplit(url).port not in self.product_ports:
            return  # a test's own scripted protocol server may send broken frames on purpose
        try:
            check_wire(payload)
            self.validated += 1
        except ProtocolViolation as exc:
            self.violations.append(f"{url}: {exc}")

    def watch(self, page: Any) -> None:
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: self.received(ws.url, payload)))


FRAMES = FrameCheck()


@pytest.fixture(autouse=True)
def _frames_valid() -> Iterator[None]:
    """Fail a browser test whose pages received a frame the published schema does not allow."""
    FRAMES.violations.clear()
    yield
    assert not FRAMES.violations, FRAMES.violations[:5]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One browser per module: another module's own sync_playwright must not overlap with this one.
    Every page of every context it makes has its websocket frames checked (FRAMES)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        new_context = browser.new_context

        def watched_context(*args: Any, **kwargs: Any) -> Any:
            context = new_context(*args, **kwargs)
            context.on("page", FRAMES.watch)
            return context

        browser.new_context = watched_context
        yield browser
        browser.close()


SHOTS = ROOT / "artifacts" / "screenshots"  # kept by CI as artifacts


def screenshot(page: Any, name: str) -> None:
    """Save the page as artifacts/screenshots/<name>.png."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def tray_page(context: Any, url: str, *, init_script: str | None = None) -> Any:
    """A watched page of `context` opened at `url`, returned once the tray's launcher shows."""
    from playwright.sync_api import expect

    page = watched_page(context)
    if init_script:
        page.add_init_script(init_script)
    page.goto(url)
    expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
    return page


CSP_LISTENER = (
    "window.__csp = []; document.addEventListener('securitypolicyviolation', "
    "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI))"
)


def watched_page(context: Any, timeout_ms: int = 15_000) -> Any:
    """A new page of `context` that records its script errors (`page.errors`) and CSP violations (`window.__csp`)."""
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.errors = errors
    page.add_init_script(CSP_LISTENER)
    return page
