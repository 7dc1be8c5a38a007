"""Live daphne servers for the operations tests (described API, health, metrics, traces, logs).

Each server is `daphne config.asgi:application` (what production runs) on a free port on 127.0.0.1, on its own
copy of one migrated demo database, with the offline model; tokens come from `manage.py drf_create_token`.
"""
from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import PYTHON, ROOT, _die_with_parent, database_copy, demo_database, free_port, process_stop, server_env

DAPHNE = str(Path(PYTHON).parent / "daphne")


@dataclass
class Daphne:
    """A running daphne: its base URL, log file and process."""

    name: str
    url: str
    log_path: Path
    proc: subprocess.Popen[bytes]
    env: dict[str, str]

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        process_stop(self.proc, 15)


def http(method: str, url: str, *, headers: dict[str, str] | None = None, body: bytes | None = None,
         timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request: (status, headers, body); HTTP errors are answers, not exceptions."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.fixture(scope="session")
def ops_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ops_live")


@pytest.fixture(scope="session")
def ops_db(ops_dir: Path) -> Path:
    """A migrated database with the demo data (users demo/admin/alice)."""
    return demo_database(ops_dir / "template.sqlite3")


def token_for(db_path: Path, username: str) -> str:
    """The user's DRF token (created if missing) in that database."""
    out = subprocess.run([PYTHON, "manage.py", "drf_create_token", username], cwd=ROOT, env=server_env(db_path),
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return out.strip().split()[2]  # "Generated token <key> for user <name>"


@pytest.fixture(scope="session")
def start_daphne(ops_dir: Path, ops_db: Path) -> Iterator[Callable[..., Daphne]]:
    """Factory: start_daphne(name, db=None, **env) -> a ready daphne (its own copy of the demo database unless `db`)."""
    servers: list[Daphne] = []

    def start(name: str, db: Path | None = None, **env: str) -> Daphne:
        if db is None:
            db = ops_dir / f"{name}.sqlite3"
            if not db.exists():
                database_copy(ops_db, db)
        full_env = server_env(db, DEBUG="False", SECRET_KEY="ops-tests-" + "x" * 50, **env)
        for _attempt in range(3):
            port = free_port()
            log_path = ops_dir / f"{name}-{port}.log"
            with open(log_path, "wb") as log:
                proc = subprocess.Popen([DAPHNE, "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"], cwd=ROOT,
                                        env=full_env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        preexec_fn=_die_with_parent)
            server = Daphne(name, f"http://127.0.0.1:{port}", log_path, proc, full_env)
            servers.append(server)
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    if http("GET", f"{server.url}/healthz", timeout=2)[0] == 200:
                        return server
                except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                    pass
                time.sleep(0.1)
            server.stop()
            if "Address already in use" not in server.log():
                raise RuntimeError(f"daphne {name} did not start:\n{server.log()[-3000:]}")
        raise RuntimeError(f"daphne {name}: no free port")

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def ops_server(start_daphne: Callable[..., Daphne]) -> Daphne:
    """One shared daphne with the quick offline model, metrics token `metrics-secret`, JSON logs."""
    return start_daphne("ops", CHAT_OFFLINE_DELAY="0", CHAT_RATE_LIMIT_PER_MINUTE="100000", CHAT_METRICS_TOKEN="metrics-secret",
                        LOG_LEVEL="INFO", ALLOWED_HOSTS="127.0.0.1,localhost")


@pytest.fixture(scope="session")
def demo_token(ops_server: Daphne, ops_dir: Path) -> str:
    return token_for(ops_dir / "ops.sqlite3", "demo")



