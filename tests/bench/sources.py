"""Search time of the sources at 100,000 objects (issue 40): `python -m tests.bench.sources` seeds the demo's articles
source to N objects in a scratch SQLite database and a scratch PostgreSQL database (created here, dropped after), builds
each index with `manage.py chat_sources_rebuild`, and prints the p50/p95 of `source_search` over the demo queries.

Options: `--objects N` (default 100,000), `--rounds R` (each query R times, default 5), `--pg URL` (the server to make
the scratch database on; default postgres://postgres@127.0.0.1:5432; `--no-pg` skips it), `--json` (one JSON line).
Each backend runs in its own process (`DATABASE_URL` is read at startup); run time is a few minutes at most.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600  # one backend's seeding, indexing and timing


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def seed_and_time(objects: int, rounds: int) -> dict[str, Any]:
    """In this process's DATABASE_URL (migrated here): N articles from the corpus, the index rebuilt, searches timed."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from pages.demo.data import ARTICLE_FIELDS, read_corpus
    from pages.demo.models import Article
    from pages.demo.search_quality import QUERIES
    from pages.demo.sources import ARTICLES
    from tools.sources.search import source_search

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    corpus = read_corpus()
    Article.objects.all().delete()
    # copies of the shipped corpus (each title numbered): the same vocabulary and term statistics at any size
    batch: list[Article] = []
    for i in range(objects):
        record = corpus[i % len(corpus)]
        copy = i // len(corpus)
        fields = {name: record[name] for name in ARTICLE_FIELDS}
        fields.update(external_id=f"b{i}", title=f"{record['title']} ({copy})", published_date=date.fromisoformat(record["published_date"]))
        batch.append(Article(**fields))
        if len(batch) == 5_000:
            Article.objects.bulk_create(batch)
            batch = []
    Article.objects.bulk_create(batch)
    seeded = time.perf_counter()
    call_command("chat_sources_rebuild", "articles", verbosity=0)
    indexed = time.perf_counter()
    user = get_user_model().objects.get_or_create(username="bench-sources")[0]
    queries = [q for q, _ in QUERIES]
    for q in queries:  # warm the caches once: the figures are a running site's, not a cold start's
        source_search(ARTICLES, user=user, context={}, query=q, limit=8)
    times: list[float] = []
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            source_search(ARTICLES, user=user, context={}, query=q, limit=8)
            times.append((time.perf_counter() - t0) * 1000)
    return {
        "backend": connection.vendor, "objects": Article.objects.count(), "searches": len(times),
        "p50_ms": round(_percentile(times, 0.50), 1), "p95_ms": round(_percentile(times, 0.95), 1),
        "seed_s": round(seeded - started, 1), "index_s": round(indexed - seeded, 1),
    }


def _child(database_url: str, objects: int, rounds: int) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-m", "tests.bench.sources", "--child", str(objects), str(rounds)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise SystemExit(f"{database_url.split('@')[-1]}: failed\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _psql(server: str, sql: str) -> None:
    subprocess.run(["psql", server.rstrip("/") + "/postgres", "-v", "ON_ERROR_STOP=1", "-qc", sql], check=True, capture_output=True, timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(seed_and_time(*args.child)))
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="pc-bench-sources-") as tmp:
        results.append(_child(f"sqlite:///{Path(tmp) / 'bench.sqlite3'}", args.objects, args.rounds))
    if not args.no_pg:
        name = f"pc_bench_sources_{uuid.uuid4().hex[:8]}"
        _psql(args.pg, f"CREATE DATABASE {name}")
        try:
            results.append(_child(f"{args.pg.rstrip('/')}/{name}", args.objects, args.rounds))
        finally:
            _psql(args.pg, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    if args.json:
        print(json.dumps(results))
        return
    for r in results:
        print(f"{r['backend']:<10} {r['objects']:>7} objects  search p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms  "
              f"({r['searches']} searches; seeding {r['seed_s']} s, indexing {r['index_s']} s)")


if __name__ == "__main__":
    main()
