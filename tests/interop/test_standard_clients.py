"""The official Node clients against a live server: `@ag-ui/client`'s HttpAgent, the `ai` package's default chat
transport read with readUIMessageStream, and the WHATWG `eventsource` client (tests/interop/js/*.test.mjs).

The server is the real product (`manage.py runserver`, daphne) on its own SQLite copy of the demo database, with
the offline model (tests/interop/provider.py adds one scripted provider failure). Node runs the tests; this test
starts the server, makes the users' tokens, and fails with Node's own report if any Node test fails."""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, LiveServer, manage, server_env

JS = Path(__file__).parent / "js"
NODE_TIMEOUT = 240


def _token(server: LiveServer, username: str) -> str:
    manage(["drf_create_token", username], server_env(server.db_path))
    return str(server.query("SELECT t.key FROM authtoken_token t JOIN auth_user u ON u.id = t.user_id WHERE u.username = ?", username)[0][0])


@pytest.mark.skipif(shutil.which("node") is None or not (ROOT / "node_modules" / "@ag-ui" / "client").exists(),
                    reason="needs node and `npm ci` (make test runs it)")
def test_official_node_clients(start_live_server: Callable[..., LiveServer]) -> None:
    server = start_live_server("interop", CHAT_PROVIDER="tests.interop.provider.FailingOfflineProvider", CHAT_OFFLINE_DELAY="0.005")
    env = {**os.environ, "PAGECHAT_URL": server.url, "PAGECHAT_TOKEN": _token(server, "demo"),
           "PAGECHAT_OTHER_TOKEN": _token(server, "alice"), "PAGECHAT_DB": str(server.db_path)}
    files = sorted(str(p) for p in JS.glob("*.test.mjs"))
    done = subprocess.run(["node", "--test", "--test-concurrency=1", *files], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=NODE_TIMEOUT)
    print(done.stdout[-20_000:])
    assert done.returncode == 0, f"{done.stdout[-20_000:]}\n{done.stderr[-5000:]}\n--- server log ---\n{server.log_tail(80)}"
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout
