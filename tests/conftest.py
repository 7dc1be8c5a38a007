"""Shared fixtures: users with tokens, the scripted provider, a websocket client, clean run state."""
from __future__ import annotations

import json
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from chat.infra import staff_settings
from chat.infra.logs import Throttled
from chat.providers.scripted import ScriptedProvider
from chat.quotas.limits import limiter
from chat.runs import manager
from tests.protocol import check_http, check_wire
from tests.resilience.invariants import FIGURES

# Redis keys of this test process (and of the servers it starts) are its own: another run's leftovers on the same
# Redis - today's budget of a user id PostgreSQL hands out again, a socket count - must not leak into this one. With
# pytest-xdist (`make test`) every worker imports this file and so has a prefix of its own: the workers' test
# databases hand out the same user ids at the same time.
TEST_REDIS_PREFIX = f"chat-test-{uuid.uuid4().hex[:12]}:"
os.environ["CHAT_REDIS_KEY_PREFIX"] = TEST_REDIS_PREFIX


def pytest_sessionstart(session: pytest.Session) -> None:
    """With REQUIRE_SERVICES=1 (CI), PostgreSQL and Redis must answer: fail the run, never skip."""
    if os.environ.get("REQUIRE_SERVICES") != "1":
        return
    problems = []
    try:
        import redis

        redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=3).ping()
    except Exception as exc:
        problems.append(f"Redis at REDIS_URL: {exc}")
    try:
        import psycopg

        url = os.environ["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
        psycopg.connect(url, connect_timeout=3).close()
    except Exception as exc:
        problems.append(f"PostgreSQL at DATABASE_URL: {exc}")
    if problems:
        pytest.exit("REQUIRE_SERVICES=1 but: " + "; ".join(problems), returncode=3)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Remove this session's Redis keys (they would expire anyway, some only after two days). An xdist worker also
    hands its resilience figures to the controller, which reports the sum (pytest_terminal_summary)."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["resilience_figures"] = FIGURES.as_dict()
    if not os.environ.get("REDIS_URL"):
        return
    try:
        import redis

        r = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=3)
        keys = list(r.scan_iter(match=f"{TEST_REDIS_PREFIX}*", count=1000))
        for start in range(0, len(keys), 500):
            r.delete(*keys[start:start + 500])
        r.close()
    except Exception:  # cleanup only: a Redis gone by now must not fail the run
        pass


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: add a finished worker's resilience figures to this process's."""
    figures = getattr(node, "workeroutput", {}).get("resilience_figures")
    if figures:
        FIGURES.merge(figures)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The resilience battery's figures (trials, events checked, losses), also kept as artifacts/resilience-figures*.json;
    reported once, by the process that saw every test's (the only one, or xdist's controller)."""
    if hasattr(terminalreporter.config, "workerinput"):
        return
    if not sum(FIGURES.trials.values()) and not FIGURES.events_checked:
        return
    terminalreporter.write_sep("-", "resilience")
    terminalreporter.write_line(FIGURES.summary())
    out = Path(__file__).resolve().parents[1] / "artifacts" / f"resilience-figures{'-services' if os.environ.get('REDIS_URL') or os.environ.get('DATABASE_URL') else ''}.json"
    try:
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(FIGURES.as_dict(), indent=2))
    except OSError:
        pass


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Services tests run only when CI asks for them (and then must not skip)."""
    for item in items:
        if "services" in item.keywords and not (os.environ.get("DATABASE_URL") or os.environ.get("REDIS_URL")):
            item.add_marker(pytest.mark.skip(reason="set DATABASE_URL / REDIS_URL to run against real services"))


@pytest.fixture(scope="session", autouse=True)
def _close_executor_connections(django_db_setup: Any, django_db_blocker: Any) -> Any:
    """Persistent connections (CONN_MAX_AGE) opened by sync_to_async's shared thread must close before
    the test database is dropped (PostgreSQL refuses while a session is open)."""
    yield
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    from chat.infra.db_threads import db_threads_close

    with django_db_blocker.unblock():
        asyncio.run(sync_to_async(connections.close_all)())
        db_threads_close()


@pytest.fixture(autouse=True)
def _clean_state(settings: Any) -> Any:
    from channels.layers import channel_layers
    from django.utils import translation

    settings.CHAT_OFFLINE_DELAY = 0
    settings.CHAT_REDIS_KEY_PREFIX = TEST_REDIS_PREFIX
    # each test has its own event loop; channels_redis binds a layer's process-local receive to the first loop
    # that used it ("Two event loops are trying to receive()"), so every test gets fresh layers
    channel_layers.backends.clear()
    _throttled_reset()
    staff_settings.clear()  # a test's rows (often written with .update(), which sends no signal) are read fresh
    ScriptedProvider.reset()
    limiter.reset()
    manager.clear()
    yield
    ScriptedProvider.reset()
    # the test client runs LocaleMiddleware in this thread: a German request would leave German active for the
    # tests after it
    translation.deactivate()


def _throttled_reset() -> None:
    """Every module-level once-a-minute warning (chat.infra.logs.Throttled: the limiters', the budgets', the
    consumer's) starts afresh: a warning another test of this process wrote less than a minute ago would otherwise
    fold this test's line, so whether a test sees its warning would depend on which tests ran before it."""
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("chat.", "tools.", "payloads.", "pages.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Throttled):
                value.__init__(value.logger, value.interval, level=value.level, traceback=value.traceback)


_CHAT_API = re.compile(r"^/api/chat(/|$)")


@pytest.fixture(autouse=True)
def _validate_chat_http(monkeypatch: Any) -> None:
    """Every chat API JSON response a test gets (POST /api/chat's body, every error body) is checked
    against the committed protocol schema; SSE bodies are checked where they are parsed."""
    from django.test import AsyncClient, Client

    def check(request: dict[str, Any], response: Any) -> None:
        if (_CHAT_API.match(request.get("PATH_INFO") or request.get("path") or "") and not response.streaming
                and response.get("Content-Type", "").startswith("application/json")):
            check_http(response.status_code, response.content)

    sync_request, async_request = Client.request, AsyncClient.request

    def request(self: Client, **req: Any) -> Any:
        response = sync_request(self, **req)
        check(req, response)
        return response

    async def arequest(self: AsyncClient, **req: Any) -> Any:
        response = await async_request(self, **req)
        check(req, response)
        return response

    monkeypatch.setattr(Client, "request", request)
    monkeypatch.setattr(AsyncClient, "request", arequest)


@pytest.fixture
def scripted(settings: Any) -> type[ScriptedProvider]:
    settings.CHAT_PROVIDER = "chat.providers.scripted.ScriptedProvider"
    return ScriptedProvider


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="ann", password="pw")


@pytest.fixture
def other_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="bob", password="pw")


@pytest.fixture
def staff_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="staff", password="pw", is_staff=True)


def token_for(user: Any) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=user)[0].key


class WS:
    """A websocket test client speaking protocol v1."""

    def __init__(self, comm: WebsocketCommunicator):
        self.comm = comm

    async def send(self, frame: dict[str, Any] | str) -> None:
        await self.comm.send_to(text_data=frame if isinstance(frame, str) else json.dumps(frame))

    async def recv(self, timeout: float = 5) -> dict[str, Any]:
        """The next server frame, validated against the committed protocol schema."""
        return check_wire(await self.comm.receive_from(timeout=timeout))

    async def chat(self, message: str, **fields: Any) -> str:
        cmid = fields.pop("client_message_id", None) or str(uuid.uuid4())
        await self.send({"type": "chat.send", "client_message_id": cmid, "conversation_id": fields.pop("conversation_id", None),
                         "message": message, "context": fields.pop("context", {}), **fields})
        return cmid

    async def until_terminal(self, timeout: float = 10) -> list[dict[str, Any]]:
        events = []
        while True:
            ev = await self.recv(timeout)
            events.append(ev)
            if ev["type"] in ("complete", "cancelled") or (ev["type"] == "error" and "seq" in ev):
                return events

    async def close(self) -> None:
        await self.comm.disconnect()


async def ws_connect(user: Any | None = None, *, token: str | None = None, headers: list[tuple[bytes, bytes]] | None = None) -> tuple[WS | None, Any]:
    """Open /ws/chat/ through the real ASGI app; returns (client or None, the handshake result)."""
    from channels.db import database_sync_to_async

    from config.asgi import application

    hdrs = list(headers or [])
    if not any(k == b"host" for k, _ in hdrs):  # what a browser or daphne always has; origins are compared with it
        hdrs.append((b"host", b"testserver"))
    if token is None and user is not None:
        token = await database_sync_to_async(token_for)(user)
    if token:
        hdrs.append((b"authorization", f"Token {token}".encode()))
    comm = WebsocketCommunicator(application, "/ws/chat/", headers=hdrs)
    connected, code = await comm.connect(timeout=5)
    return (WS(comm) if connected else None), code


@pytest.fixture
def corpus(db: Any) -> int:
    """The shipped article corpus (transactional tests flush what the data migration loaded)."""
    from pages.demo.data import load_articles
    from pages.demo.models import Article
    from pages.demo.sources import ARTICLES
    from tools.sources.index import source_rebuild

    if not Article.objects.exists():
        load_articles(Article)  # in bulk: no signal indexes them
        source_rebuild(ARTICLES)  # the flush emptied the table, not the search index (it kept the flushed rows)
    return Article.objects.count()
