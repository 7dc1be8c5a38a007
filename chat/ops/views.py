"""Operations endpoints a host mounts at its root (`include("chat.ops.urls")`): liveness, readiness, metrics.

All three are plain async views: no session, no template, no middleware work beyond Django's own, so a 1 s
probe costs a few milliseconds. Failure details are check names and exception class names only (a Redis
URL or a database error may carry credentials).
"""
from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from chat.api.auth import user_for_authorization
from chat.conf import chat_settings
from chat.infra.db_threads import PROBES
from chat.infra.metrics import exposition
from chat.runs import manager

log = logging.getLogger(__name__)
CHECK_TIMEOUT = 0.8  # seconds per check: a probe must answer within its own 1 s timeout
_migrated = False  # once every migration is applied it stays so for the life of the process
_redis_clients: dict[tuple[int, str], Any] = {}


def _database() -> None:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")


def _migrations() -> None:
    global _migrated
    if _migrated:
        return
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        raise RuntimeError(f"{len(plan)} migration(s) not applied")
    _migrated = True


async def _redis() -> None:
    url = chat_settings.CHAT_REDIS_URL
    key = (id(asyncio.get_running_loop()), url)
    client = _redis_clients.get(key)
    if client is None:
        import redis.asyncio as aioredis

        client = _redis_clients[key] = aioredis.from_url(url, socket_connect_timeout=CHECK_TIMEOUT, socket_timeout=CHECK_TIMEOUT)
    await client.ping()


async def _run_log() -> None:
    await manager.run_log().ping()


async def _timed(check: Callable[[], Awaitable[None]]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(check(), CHECK_TIMEOUT)
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__, "ms": round((time.perf_counter() - started) * 1000, 1)}
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 1)}


@never_cache
@require_GET
async def healthz(request: HttpRequest) -> HttpResponse:
    """GET /healthz: the process serves requests (liveness; checks nothing else)."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
async def readyz(request: HttpRequest) -> HttpResponse:
    """GET /readyz: 200 when the database answers, migrations are applied, Redis (when configured) and the run log
    answer; else 503. The body names each check with its outcome and time."""
    checks: dict[str, Callable[[], Awaitable[None]]] = {
        "database": PROBES.run(_database),
        "migrations": PROBES.run(_migrations),
        "run_log": _run_log,
    }
    if chat_settings.CHAT_REDIS_URL:
        checks["redis"] = _redis
    results = dict(zip(checks, await asyncio.gather(*(_timed(c) for c in checks.values())), strict=True))
    ready = all(r["ok"] for r in results.values())
    if not ready:
        log.warning("not ready: %s", ", ".join(f"{name} ({r['error']})" for name, r in results.items() if not r["ok"]))
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": results}, status=200 if ready else 503)


async def _metrics_allowed(request: HttpRequest) -> bool:
    auth = request.headers.get("Authorization", "")
    expected = chat_settings.CHAT_METRICS_TOKEN
    if auth:
        kind, _, value = auth.partition(" ")
        if kind.lower() == "bearer" and expected:
            return hmac.compare_digest(value.strip().encode(), expected.encode())
        if kind.lower() == "token":  # a staff user's DRF token
            user = await user_for_authorization(auth)
            return bool(user is not None and user.is_staff)
        return False
    user = await request.auser()
    return bool(user.is_authenticated and user.is_staff)


@never_cache
@require_GET
async def metrics(request: HttpRequest) -> HttpResponse:
    """GET /metrics: Prometheus text format, for `Authorization: Bearer <CHAT_METRICS_TOKEN>` or staff; 403 otherwise."""
    if not await _metrics_allowed(request):
        return JsonResponse({"type": "error", "code": "unauthorized", "message": "metrics are for staff or the metrics token"}, status=403)
    from prometheus_client import CONTENT_TYPE_LATEST

    body = await sync_to_async(exposition, thread_sensitive=False)()  # reads the multiprocess files: off the loop
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
