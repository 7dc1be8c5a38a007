"""A consumer the server cancels before `disconnect()` runs (daphne's close timeout) still releases everything."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chat.quotas.limits import limiter
from tests.conftest import ws_connect


@pytest.mark.django_db(transaction=True)
async def test_a_cancelled_consumer_stops_its_watcher_and_gives_back_its_socket(user: Any) -> None:
    ws, _ = await ws_connect(user)
    assert ws is not None
    assert limiter.open_sockets(user.pk) == 1
    watchers: list[asyncio.Task[Any]] = []
    for _ in range(100):  # started once the socket joined its groups (with Redis, after the handshake's accept)
        watchers = [t for t in asyncio.all_tasks() if t.get_name().startswith("auth-watch:")]
        if watchers:
            break
        await asyncio.sleep(0.02)
    assert len(watchers) == 1
    ws.comm.future.cancel()  # what a server does to an application instance it gave up on: no disconnect()
    for _ in range(50):
        await asyncio.sleep(0.02)
        if watchers[0].done() and limiter.open_sockets(user.pk) == 0:
            break
    assert watchers[0].done()
    assert limiter.open_sockets(user.pk) == 0
