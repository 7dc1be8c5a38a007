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


async def test_a_job_of_a_yielding_thread_waits_for_the_admissions_queued_before_it() -> None:
    """The runs' thread (RUNS) yields to admissions: its next job starts once the admissions' thread is idle."""
    assert db_threads.RUNS._yields_to is db_threads.ADMISSION  # the pair this is about
    first, second = DbThread("test-ack"), DbThread("test-runs", yields_to=None)
    second._yields_to = first
    release = threading.Event()
    order: list[str] = []

    def admission() -> None:
        release.wait(5)
        order.append("admission")

    def runs_job() -> None:
        order.append("run")

    held = asyncio.ensure_future(first.run(admission)())
    await asyncio.sleep(0.01)
    ran = asyncio.ensure_future(second.run(runs_job)())
    await asyncio.sleep(0.03)
    assert order == []  # the run's job waits while an admission runs
    release.set()
    await asyncio.gather(held, ran)
    assert order == ["admission", "run"]
    assert first._pending == second._pending == 0


async def test_a_yielding_job_waits_no_longer_than_the_bound(monkeypatch: Any) -> None:
    monkeypatch.setattr(db_threads, "YIELD_AT_MOST", 0.05)
    first, second = DbThread("test-ack"), DbThread("test-runs")
    second._yields_to = first
    release = threading.Event()
    held = asyncio.ensure_future(first.run(lambda: release.wait(5))())
    await asyncio.sleep(0.01)
    try:
        async with asyncio.timeout(2):
            assert await second.run(lambda: "ran")() == "ran"  # while the admission still runs
    finally:
        release.set()
        await held


async def test_a_job_cancelled_before_it_ran_is_no_longer_pending() -> None:
    """A waiter cancelled while its job was queued: the job never runs and the thread counts it as gone (else every
    later job of a thread yielding to it would wait the whole bound)."""
    thread = DbThread("test-ack")
    release = threading.Event()
    ran: list[int] = []
    held = asyncio.ensure_future(thread.run(lambda: release.wait(5))())
    queued = asyncio.ensure_future(thread.run(lambda: ran.append(1))())
    await asyncio.sleep(0.01)
    queued.cancel()
    release.set()
    await held
    with pytest.raises(asyncio.CancelledError):
        await queued
    await asyncio.sleep(0.01)
    assert ran == [] and thread._pending == 0
