"""The product's ASGI app, plus an opt-in bench hook: counts the SQL the process executes and answers
`GET /__bench__/stats` (and `/__bench__/threads`, `/__bench__/gc`, `/__bench__/profile/{start,stop}`). Bench servers only:
`daphne tests.bench.asgi_counting:application`. Product code is untouched."""
from __future__ import annotations

import cProfile
import gc
import json
import os
import re
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from django.db.backends.signals import connection_created

if os.environ.get("BENCH_SWITCH_INTERVAL"):  # experiment knob: the GIL hand-off interval (default 5 ms)
    sys.setswitchinterval(float(os.environ["BENCH_SWITCH_INTERVAL"]))

_lock = threading.Lock()
_statements: Counter[str] = Counter()  # "INSERT pagechat_message", "SELECT", ...
_WRITE = re.compile(r'^\s*(INSERT|UPDATE|DELETE|REPLACE)\b(?:\s+OR\s+\w+)?(?:\s+INTO)?\s+"?(\w+)"?', re.I)
_HEARTBEAT = re.compile(r'^\s*UPDATE\s+"?pagechat_run"?\s+SET\s+"?heartbeat_at"?', re.I)
_profiler: cProfile.Profile | None = None
_SQL_LOG = bool(os.environ.get("BENCH_SQL_LOG"))
_SQL_SLOW_MS = float(os.environ.get("BENCH_SQL_SLOW_MS") or 0)  # experiment knob: log statements slower than this


def _count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    m = _WRITE.match(sql)
    key = f"{m.group(1).upper()} {m.group(2)}" if m else sql.lstrip()[:9].split(" ", 1)[0].upper()
    if key == "UPDATE pagechat_run" and _HEARTBEAT.search(sql):
        key = "UPDATE pagechat_run (heartbeat)"  # one statement per interval for all of the process's runs
    with _lock:
        _statements[key] += 1
    if _SQL_LOG:  # experiment knob: every statement, to find the ones a turn could do without
        print(f"SQL [{threading.current_thread().name}] {sql[:300]}", file=sys.stderr, flush=True)
    if not _SQL_SLOW_MS:
        return execute(sql, params, many, context)
    began = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        took = (time.perf_counter() - began) * 1000
        if took > _SQL_SLOW_MS:
            print(f"SLOW SQL {took:.1f} ms [{threading.current_thread().name}] {sql[:120]}", file=sys.stderr, flush=True)


def _on_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
    if _count not in connection.execute_wrappers:
        connection.execute_wrappers.append(_count)


connection_created.connect(_on_connection)

_executor: dict[str, Any] = {"jobs": 0, "wait_s": 0.0, "run_s": 0.0, "waits": []}
if os.environ.get("BENCH_TRACE_EXECUTOR"):  # experiment knob: queueing in the sync_to_async thread(s)
    import concurrent.futures
    import time

    _submit = concurrent.futures.ThreadPoolExecutor.submit

    def _timed_submit(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        queued = time.perf_counter()

        def job() -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with _lock:
                    _executor["jobs"] += 1
                    _executor["wait_s"] += started - queued
                    _executor["run_s"] += time.perf_counter() - started
                    _executor["waits"].append(started - queued)

        return _submit(self, job)

    concurrent.futures.ThreadPoolExecutor.submit = _timed_submit  # type: ignore[method-assign]

# CPU of the threads that ended (Django's ASGI handler runs each HTTP request's sync work on a thread of its own,
# which ends with the request): /proc lists live threads only, so the harness adds what this file holds, the
# nanoseconds of every thread that ended here (tests.bench.server.Server.cpu).
EXITED_CPU_DIR = Path(__file__).resolve().parents[2] / "var" / "bench" / "cpu"
EXITED_CPU_DIR.mkdir(parents=True, exist_ok=True)
_exited_fd = os.open(EXITED_CPU_DIR / f"exited-{os.getpid()}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
_exited_ns = 0
_thread_run = threading.Thread.run


def _counted_run(self: threading.Thread) -> None:
    global _exited_ns
    try:
        _thread_run(self)
    finally:
        with _lock:
            _exited_ns += time.thread_time_ns()
            os.pwrite(_exited_fd, b"%020d" % _exited_ns, 0)


threading.Thread.run = _counted_run  # type: ignore[method-assign]

from config.asgi import application as _app  # noqa: E402  (after the signal: count from the first query)


def stats() -> dict[str, Any]:
    with _lock:
        statements = dict(_statements)
    writes = {k: v for k, v in statements.items() if k.split(" ", 1)[0] in ("INSERT", "UPDATE", "DELETE", "REPLACE")}
    heartbeat = sum(v for k, v in writes.items() if k.endswith("(heartbeat)"))
    with _lock:
        waits = sorted(_executor["waits"])
        executor = {k: v for k, v in _executor.items() if k != "waits"}
        _executor["waits"] = []
    if waits:
        executor["wait_p50_ms"] = round(waits[len(waits) // 2] * 1000, 2)
        executor["wait_p99_ms"] = round(waits[int(len(waits) * 0.99)] * 1000, 2)
    return {"pid": os.getpid(), "executor": executor, "db_writes": sum(writes.values()), "db_heartbeat_writes": heartbeat,
            "db_statements": sum(statements.values()),
            "writes_by_table": writes, "statements": statements}


async def _json(send: Any, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": data})


async def application(scope: dict[str, Any], receive: Any, send: Any) -> Any:
    global _profiler
    path = scope.get("path", "")
    if scope["type"] != "http" or not path.startswith("/__bench__/"):
        return await _app(scope, receive, send)
    if path == "/__bench__/stats":
        return await _json(send, stats())
    if path == "/__bench__/threads":  # native thread id -> name, to split the process's CPU by thread
        return await _json(send, {str(t.native_id): t.name for t in threading.enumerate()})
    if path == "/__bench__/gc":
        return await _json(send, {"collected": gc.collect()})
    if path == "/__bench__/profile/start":
        _profiler = cProfile.Profile()  # Python 3.12's cProfile (sys.monitoring) sees every thread of the process
        _profiler.enable()
        return await _json(send, {"ok": True})
    if path == "/__bench__/profile/stop":
        out = (scope.get("query_string") or b"").decode() or "/tmp/bench.prof"
        if _profiler is not None:
            _profiler.disable()
            _profiler.dump_stats(out)
            _profiler = None
        return await _json(send, {"ok": True, "path": out})
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b""})
