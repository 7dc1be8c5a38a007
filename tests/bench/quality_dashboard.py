"""How fast the admin's quality dashboard (/admin/pagechat/quality/) answers over 100,000 turns, timed from outside.

For each database (a scratch SQLite file and a scratch PostgreSQL database of this bench's own name, dropped at the
end) it migrates, seeds `--turns` turns (90 days, six pages, 2% of them eval conversations, tool calls, verdicts,
comments, errors and first-text times), starts daphne with production settings (DEBUG off, collected static files),
signs a staff user in through the admin's login form and times `--requests` GETs of each view of the dashboard
(the whole request, client side), printing p50 / p95 per view.

    .venv/bin/python -m tests.bench.quality_dashboard [--turns 100000] [--requests 20] [--db sqlite,postgres] [--keep]
        [--postgres postgres://postgres@127.0.0.1:5432]   # the server; the bench creates and drops its own database

It prints, per view, the client's p50 / p95, the server process's CPU per request (what the load on a shared machine
moves least) and the cores the machine's other processes used meanwhile. Seeding 100,000 turns takes minutes:
`--keep` keeps the databases (var/bench/quality/, pc_quality_bench_<turns>) for the next run.

`python -m tests.bench.quality_dashboard seed --turns N` (with DATABASE_URL) only seeds.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.bench.server import CLK_TCK, ROOT, Server, machine_busy, own_cpu

PAGES = ("home", "streams", "edit-stream", "new-stream", "reports", "")  # "" - a conversation started off any page
ERRORS = ("provider_error", "timeout", "overloaded", "rate_limited", "internal")
TOOLS = ("search_articles", "calculate", "stream_summary", "fetch_webpage")
STAFF, PASSWORD = "quality-bench", "quality-bench-pw"
DB_NAME = "pc_quality_bench"
VIEWS = {  # what a staff reader opens: the default month, a quarter, a quarter of one page, a week
    "30 days, all pages": "?period=30",
    "90 days, all pages": "?period=90",
    "90 days, one page": "?period=90&page=reports",
    "7 days, all pages": "?period=7",
}


def seed(turns: int, *, days: int = 90, seed_value: int = 39) -> dict[str, int]:
    """`turns` turns in conversations of 1-9 turns over the last `days` days, with a staff reader allowed to view runs.

    Each run carries 4 KB of diagnostics and each answer 600 characters, as real ones do (more, often): the rows the
    dashboard must not read are as wide as in production."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.db import connection, transaction
    from django.utils import timezone

    from chat.models import Conversation, Message, Run, ToolCall

    if Run.objects.count() == turns and get_user_model().objects.filter(username=STAFF).exists():  # kept from a run with --keep
        return {"conversations": Conversation.objects.count(), "turns": turns, "tool_calls": ToolCall.objects.count(), "kept": 1}
    if Run.objects.exists():
        raise SystemExit("the database holds other runs: seed an empty one")
    rng = random.Random(seed_value)
    User = get_user_model()
    staff, _ = User.objects.get_or_create(username=STAFF, defaults={"is_staff": True})
    staff.set_password(PASSWORD)
    staff.save()
    staff.user_permissions.add(Permission.objects.get(content_type__app_label="pagechat", codename="view_run"))
    users = [User.objects.get_or_create(username=f"quality{i}")[0] for i in range(50)]
    # the rows carry their own times (auto_now_add would stamp them all now)
    for model in (Conversation, Message, Run, ToolCall):
        model._meta.get_field("created_at").auto_now_add = False
    for model in (Conversation, Message):
        model._meta.get_field("updated_at").auto_now = False
    # a run's diagnostics as the engine keeps them (system prompt, the messages sent): what makes a run's row wide
    diagnostics = {"system_prompt": "You help people with their research streams on this page. " * 50,
                   "messages": [{"role": "user", "content": "What do the latest reports say about my streams? " * 20}]}
    answer = "The latest reports cover three of your streams; the oncology one has twelve new articles this week. " * 6
    now = timezone.now()
    made = 0
    counts = {"conversations": 0, "turns": 0, "tool_calls": 0}
    while made < turns:
        batch_convs: list[Conversation] = []
        plan = []
        while made < turns and len(batch_convs) < 1000:
            n = min(rng.randint(1, 9), turns - made)
            started = now - timedelta(days=rng.uniform(0, days), minutes=n * 2)
            batch_convs.append(Conversation(owner=rng.choice(users), title=f"bench {made}", page=rng.choice(PAGES),
                                            is_eval=rng.random() < 0.02, created_at=started, updated_at=started))
            plan.append((started, n))
            made += n
        with transaction.atomic():
            Conversation.objects.bulk_create(batch_convs)
            messages, runs = [], []
            for conv, (started, n) in zip(batch_convs, plan):
                for i in range(n):
                    at = started + timedelta(minutes=2 * i)
                    verdict = rng.choices(["", "good", "bad"], [94, 4, 2])[0]
                    messages.append(Message(conversation=conv, role="user", content=f"question {i}", created_at=at, updated_at=at))
                    messages.append(Message(conversation=conv, role="assistant", content=answer, created_at=at, updated_at=at,
                                            feedback=verdict, feedback_comment="not what I asked" if verdict == "bad" and rng.random() < 0.5 else ""))
            Message.objects.bulk_create(messages, batch_size=2000)
            k = 0
            for conv, (started, n) in zip(batch_convs, plan):
                for i in range(n):
                    at = started + timedelta(minutes=2 * i)
                    error = rng.choice(ERRORS) if rng.random() < 0.03 else ""
                    input_tokens, output_tokens = rng.randint(500, 4000), rng.randint(20, 600)
                    runs.append(Run(conversation=conv, user_message=messages[k], assistant_message=messages[k + 1], created_at=at,
                                    status="error" if error else "completed", error_code=error, provider="anthropic", model="claude-sonnet-5",
                                    input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=rng.choice([0, 0, 1200]),
                                    cost_usd=Decimal(input_tokens * 3 + output_tokens * 15) / Decimal(1_000_000),
                                    time_to_first_token_ms=None if error else rng.lognormvariate(6.5, 0.5),
                                    duration_ms=rng.uniform(1000, 20000), finished_at=at + timedelta(seconds=5), diagnostics=diagnostics))
                    k += 2
            Run.objects.bulk_create(runs, batch_size=2000)
            calls = []
            for run in runs:
                for index in range(rng.choices([0, 1, 2], [60, 30, 10])[0]):
                    calls.append(ToolCall(run=run, index=index, tool_use_id=f"t{index}", name=rng.choice(TOOLS), created_at=run.created_at,
                                          status=rng.choices(["ok", "error", "interrupted"], [94, 5, 1])[0], duration_ms=rng.uniform(5, 900)))
            ToolCall.objects.bulk_create(calls, batch_size=2000)
        counts["conversations"] += len(batch_convs)
        counts["turns"] += len(runs)
        counts["tool_calls"] += len(calls)
    if connection.vendor == "postgresql":  # what autovacuum does to a table this size soon after: statistics, visibility map
        with connection.cursor() as cursor:
            for table in ("pagechat_conversation", "pagechat_message", "pagechat_run", "pagechat_toolcall"):
                cursor.execute(f"VACUUM ANALYZE {table}")
    return counts


def _env(database_url: str, static_root: Path) -> dict[str, str]:
    """Production-like settings: DEBUG off, collected static files, quiet logs."""
    return {"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": database_url, "REDIS_URL": "", "DEBUG": "False",
            "SECRET_KEY": "quality-bench-secret-key-not-for-production-0123456789", "ALLOWED_HOSTS": "127.0.0.1",
            "STATIC_ROOT": str(static_root), "LOG_LEVEL": "WARNING"}


def _run(env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    out = subprocess.run([sys.executable, *args], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def _signed_in(base: str) -> Any:
    """An HTTP session signed in to the admin through its login form (the CSRF cookie and token as a browser sends them)."""
    import requests

    session = requests.Session()
    form = session.get(f"{base}/admin/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token, form.text[:500]
    answer = session.post(f"{base}/admin/login/?next=/admin/", data={"username": STAFF, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1),
                                                                      "next": "/admin/"}, headers={"Referer": f"{base}/admin/login/"}, timeout=30)
    assert answer.ok and "/admin/login/" not in answer.url, (answer.status_code, answer.url)
    return session


def _process_cpu(pid: int) -> float:
    """CPU seconds of process `pid`, its ended threads included (Django runs each request's view in a thread of its
    own, gone when the request ends: the live threads' own counters would miss it)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def measure(name: str, database_url: str, *, turns: int, requests_per_view: int, static_root: Path, work: Path) -> dict[str, dict[str, float]]:
    """Migrate and seed `database_url`, serve it with daphne and time each view of the dashboard; p50/p95 in ms per view."""
    env = _env(database_url, static_root)
    t0 = time.perf_counter()
    _run(env, "manage.py", "migrate", "--noinput")
    counts = _run(env, "-m", "tests.bench.quality_dashboard", "seed", "--turns", str(turns)).strip().splitlines()[-1]
    print(f"[{name}] migrated and seeded in {time.perf_counter() - t0:.0f} s: {counts}", flush=True)
    server = Server(f"quality-{name}", "config.asgi:application", env, work / "logs").start()
    results: dict[str, dict[str, float]] = {}
    try:
        base = f"http://127.0.0.1:{server.port}"
        session = _signed_in(base)
        for view, query in VIEWS.items():
            url = f"{base}/admin/pagechat/quality/{query}"
            first = session.get(url, timeout=120)  # warm: the process's first request of this view
            assert first.status_code == 200 and "pagechat-quality-dashboard" in first.text, (first.status_code, first.text[:300])
            times = []
            cpu, own, busy, wall = _process_cpu(server.pid), own_cpu(), machine_busy(), time.perf_counter()
            for _ in range(requests_per_view):
                start = time.perf_counter()
                response = session.get(url, timeout=120)
                times.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200
            server_cpu, wall = _process_cpu(server.pid) - cpu, time.perf_counter() - wall
            other = (machine_busy() - busy - server_cpu - (own_cpu() - own)) / wall  # cores the machine's other processes used
            results[view] = {"p50_ms": round(_percentile(times, 0.5), 1), "p95_ms": round(_percentile(times, 0.95), 1),
                             "server_cpu_ms": round(server_cpu * 1000 / requests_per_view, 1), "other_load_cores": round(max(other, 0), 2)}
            print(f"[{name}] {view}: p50 {results[view]['p50_ms']} ms, p95 {results[view]['p95_ms']} ms, server CPU "
                  f"{results[view]['server_cpu_ms']} ms a request ({requests_per_view} requests, {len(first.content) // 1024} KiB; "
                  f"other processes used {results[view]['other_load_cores']} cores)", flush=True)
    finally:
        server.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=["bench", "seed"], default="bench")
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=20, help="timed requests of each view")
    parser.add_argument("--db", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432", help="the PostgreSQL server (no database name)")
    parser.add_argument("--keep", action="store_true", help=f"keep the seeded databases ({DB_NAME}_<turns>, var/bench/quality/) and reuse them")
    args = parser.parse_args(argv)
    if args.command == "seed":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        print(seed(args.turns))
        return 0
    kept = ROOT / "var" / "bench" / "quality"  # --keep: the seeded databases stay for the next run
    with tempfile.TemporaryDirectory(prefix="quality-bench-") as tmp:
        work = Path(tmp)
        static_root = work / "static"
        _run(_env(f"sqlite:///{work / 'collect.sqlite3'}", static_root), "manage.py", "collectstatic", "--noinput", "-v", "0")
        summary: dict[str, dict[str, dict[str, float]]] = {}
        for name in args.db.split(","):
            if name == "sqlite":
                kept.mkdir(parents=True, exist_ok=True)
                db = (kept if args.keep else work) / f"quality-{args.turns}.sqlite3"
                summary[name] = measure(name, f"sqlite:///{db}", turns=args.turns, requests_per_view=args.requests, static_root=static_root, work=work)
            elif name == "postgres":
                server_url = args.postgres.rstrip("/")
                database = f"{DB_NAME}_{args.turns}"
                admin = [sys.executable, "-c", "import sys, psycopg; c = psycopg.connect(sys.argv[1], autocommit=True); c.execute(sys.argv[2])",
                         f"{server_url}/postgres".replace("postgres://", "postgresql://", 1)]
                exists = subprocess.run([*admin, f"CREATE DATABASE {database}"], capture_output=True, text=True, timeout=60)
                if exists.returncode and not (args.keep and "already exists" in exists.stderr):
                    subprocess.run([*admin, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"], check=True, timeout=60)
                    subprocess.run([*admin, f"CREATE DATABASE {database}"], check=True, timeout=60)
                try:
                    summary[name] = measure(name, f"{server_url}/{database}", turns=args.turns, requests_per_view=args.requests,
                                            static_root=static_root, work=work)
                finally:
                    if not args.keep:
                        subprocess.run([*admin, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"], check=True, timeout=60)
            else:
                parser.error(f"unknown database {name!r}")
    print(f"\n/admin/pagechat/quality/ over {args.turns:,} turns, {args.requests} requests a view (daphne, DEBUG off; "
          f"the whole request timed by the client, the server process's CPU per request beside it):")
    for name, views in summary.items():
        for view, r in views.items():
            print(f"  {name:9} {view:20} p50 {r['p50_ms']:7.1f} ms   p95 {r['p95_ms']:7.1f} ms   server CPU {r['server_cpu_ms']:7.1f} ms"
                  f"   (other load {r['other_load_cores']} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
