"""A refused websocket handshake logs why (bad token, origin not allowed, no session), never the secret."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def auth_log() -> Any:
    records = Records()
    logger = logging.getLogger("chat.auth")
    logger.addHandler(records)
    yield records.messages
    logger.removeHandler(records)


async def test_each_refusal_says_why(auth_log: list[str]) -> None:
    cases = [
        ({"token": "s3cret-not-a-token"}, "bad token"),
        ({"headers": [(b"origin", b"http://evil.example")]}, "'http://evil.example' is not allowed: it must be this server's own origin"),
        ({"headers": [(b"origin", b"null")]}, "no Origin header"),
        ({"headers": []}, "no Origin header"),
        ({"headers": [(b"origin", b"ftp://testserver")]}, "is not an http(s) origin"),
        ({"headers": [(b"origin", b"http://testserver")]}, "no signed-in session"),
    ]
    for kwargs, reason in cases:
        auth_log.clear()
        ws, _ = await ws_connect(None, **kwargs)
        assert ws is None
        assert len(auth_log) == 1 and reason in auth_log[0] and "/ws/chat/" in auth_log[0], (kwargs, auth_log)
        assert "s3cret" not in auth_log[0]


async def test_an_accepted_socket_logs_nothing(user: Any, auth_log: list[str]) -> None:
    ws, _ = await ws_connect(user)
    assert ws is not None and auth_log == []
    await ws.close()
