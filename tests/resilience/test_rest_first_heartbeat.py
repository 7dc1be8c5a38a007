"""One real daphne process (the default database of the run: SQLite) whose first request is a REST turn keeps its
heartbeat: `POST <api>chat` is a sync view that runs the turn through async_to_sync, and the process-wide heartbeat
started inside it must not depend on that request (its executor is gone once it answered). The two-process version,
with the other process's sweep, is in test_cluster_background.py."""
from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from chat.models import Run
from tests.bench.server import Server
from tests.conftest import token_for
from tests.fakes.anthropic_server import FakeAnthropicServer, text_response
from tests.protocol import check_http
from tests.resilience.server_logs import read_json_log

pytestmark = pytest.mark.django_db(transaction=True)
INTERVAL = 0.5


def _database_url() -> str:
    """The URL of the database this test runs on (the test database), for the server process."""
    db = django_settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _rest_turn(port: int, token: str, message: str) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"client_message_id": str(uuid.uuid4()), "message": message}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/chat", data=body, method="POST",
                                 headers={"Authorization": f"Token {token}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    return status, check_http(status, raw)


def test_a_process_whose_first_request_was_rest_keeps_beating_for_its_later_runs(user: Any, tmp_path: Path) -> None:
    token = token_for(user)
    with FakeAnthropicServer(default=text_response("short ", "answer")) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "CHAT_", "SQLITE_TEST_NAME"))}
        env.update({
            "DATABASE_URL": _database_url(), "REDIS_URL": "", "DEBUG": "1", "ALLOWED_HOSTS": "127.0.0.1",
            "CHAT_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "sk-ant-fake",
            "CHAT_HEARTBEAT_INTERVAL": str(INTERVAL), "CHAT_STALE_AFTER": "2.5", "CHAT_RATE_LIMIT_PER_MINUTE": "1000",
            "LOG_FORMAT": "json", "LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1",
        })
        server = Server("rest-first", "config.asgi:application", env, tmp_path, server="daphne").start()
        try:
            status, body = _rest_turn(server.port, token, "first")  # the process's first request
            assert status == 200, body

            chunks = [f"long{i} " for i in range(80)]
            fake.enqueue(text_response(*chunks, pace=0.05))  # ~4 s: eight heartbeats
            known = set(Run.objects.values_list("pk", flat=True))
            result: list[tuple[int, dict[str, Any]]] = []
            turn = threading.Thread(target=lambda: result.append(_rest_turn(server.port, token, "a long one")))
            turn.start()
            beats: list[datetime] = []
            while turn.is_alive():
                run = Run.objects.exclude(pk__in=known).first()
                if run is not None and run.status == Run.Status.RUNNING and run.heartbeat_at is not None:
                    beats.append(run.heartbeat_at)
                time.sleep(0.1)
            turn.join()
        finally:
            server.stop()
    status, body = result[0]
    assert status == 200 and body["message"] == "".join(chunks), body
    span = (max(beats) - min(beats)).total_seconds() if beats else 0.0
    assert span >= 4 * INTERVAL, f"heartbeat_at moved {span:.2f} s over {len(set(beats))} values during a ~4 s run"
    log = (tmp_path / "rest-first.log").read_text(errors="replace")
    assert "heartbeat failed" not in log
    assert read_json_log(log).problems == [], read_json_log(log).problems[:5]
