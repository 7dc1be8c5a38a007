"""chat.infra.db_threads: jobs run in order on their own thread; a connection used moments ago skips the health check."""
from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from django.db import connections

from chat.infra import db_threads
from chat.infra.db_threads import DbThread

pytestmark = pytest.mark.django_db(transaction=True)


def _query() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return threading.current_thread().name


@pytest.fixture
def health_checks(monkeypatch: Any) -> list[str]:
    """The names of the threads whose connection ran Django's health check (`is_usable`), in order."""
    calls: list[str] = []
    backend = type(connections["default"])
    real = backend.is_usable

    def spy(self: Any) -> bool:
        calls.append(threading.current_thread().name)
        return bool(real(self))

    monkeypatch.setattr(backend, "is_usable", spy)
    return calls


async def test_jobs_run_on_the_named_thread_and_back_to_back_ones_skip_the_health_check(health_checks: list[str]) -> None:
    assert connections["default"].settings_dict["CONN_HEALTH_CHECKS"]  # the setting this is about
    thread = DbThread("test-db")
    try:
        name = await thread.run(_query)()  # the thread's first connection: new connections are healthy
        assert name.startswith("test-db")
        for _ in range(3):
            await thread.run(_query)()
        assert health_checks == []
    finally:
        thread.close_connections()


async def test_a_connection_idle_longer_than_the_bypass_is_checked_before_its_next_job(health_checks: list[str], monkeypatch: Any) -> None:
    thread = DbThread("test-db")
    try:
        await thread.run(_query)()
        monkeypatch.setattr(db_threads, "HEALTH_CHECK_BYPASS", 0.0)  # every gap is "idle" now
        await thread.run(_query)()
        await thread.run(_query)()
        assert len(health_checks) == 2 and all(n.startswith("test-db") for n in health_checks)
    finally:
        thread.close_connections()


async def test_a_connection_in_error_is_checked_even_when_just_used(health_checks: list[str]) -> None:
    thread = DbThread("test-db")

    def failing() -> None:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT * FROM no_such_table_here")

    try:
        await thread.run(_query)()
        with pytest.raises(Exception, match="no_such_table_here"):
            await thread.run(failing)()
        assert await thread.run(_query)()  # Django's recycling checks it (errors occurred) and keeps it: it works
        assert len(health_checks) == 1
    finally:
        thread.close_connections()


def _backend_pid() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.mark.skipif(connections["default"].vendor != "postgresql", reason="the server drops a connection: PostgreSQL (the services run)")
async def test_a_connection_the_server_dropped_while_idle_is_replaced_before_the_next_job() -> None:
    from asgiref.sync import sync_to_async

    thread = DbThread("test-db")
    try:
        first = await thread.run(_backend_pid)()

        def terminate() -> bool:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [first])
                return bool(cursor.fetchone()[0])

        assert await sync_to_async(terminate)()
        await asyncio.sleep(db_threads.HEALTH_CHECK_BYPASS + 0.1)  # idle: the next job checks, finds it gone, reconnects
        second = await thread.run(_backend_pid)()
        assert second != first
    finally:
        thread.close_connections()


def test_closing_the_database_threads_closes_every_one_the_module_defines(monkeypatch: Any) -> None:
    """Tests drop their database after closing these; a thread left out holds a session and the drop fails."""
    closed: list[DbThread] = []
    monkeypatch.setattr(DbThread, "close_connections", lambda self: closed.append(self))
    db_threads.db_threads_close()
    defined = [v for v in vars(db_threads).values() if isinstance(v, DbThread)]
    assert {t._executor._thread_name_prefix for t in defined} == {"chat-ack", "chat-auth", "chat-runs", "chat-probe", "chat-beat"}
    assert sorted(map(id, closed)) == sorted(map(id, defined))
