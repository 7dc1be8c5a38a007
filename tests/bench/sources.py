"""Search time of the sources at 100,000 objects (issue 40): `python -m tests.bench.sources` seeds the demo's articles
source to N objects in a scratch SQLite database and a scratch PostgreSQL database (created here, dropped after), builds
each index with `manage.py chat_sources_rebuild`, and prints the p50/p95 of `source_search` over the demo queries and
the precision of their top 8 (pages.demo.search_quality: results on the expected topics / results returned).

Options: `--objects N` (default 100,000), `--rounds R` (each query R times, default 5), `--pg URL` (the server to make
the scratch database on; default postgres://postgres@127.0.0.1:5432; `--no-pg` skips it), `--json` (one JSON line),
`--record` (write the figures into tests/bench/results/latest.json as its `sources` scenario, then its Markdown and the
README's table; `make bench` runs the same measurement as its `sources` scenario). Each backend runs in its own
process (`DATABASE_URL` is read at startup); run time is a few minutes per backend.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
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
    from pages.demo.search_quality import QUERIES, TOP_K, quality_measure
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
    quality = quality_measure(lambda query, limit: [h.obj for h in source_search(ARTICLES, user=user, context={}, query=query, limit=limit)],
                              k=TOP_K)
    return {
        "backend": connection.vendor, "objects": Article.objects.count(), "queries": len(queries), "searches": len(times),
        "p50_ms": round(_percentile(times, 0.50), 1), "p95_ms": round(_percentile(times, 0.95), 1),
        "precision_at_8": round(quality.precision, 3), "no_match_correct": quality.no_match_correct,
        "no_match_total": quality.no_match_total, "seed_s": round(seeded - started, 1), "index_s": round(indexed - seeded, 1),
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


def measure(objects: int, rounds: int, pg_server: str | None) -> dict[str, Any]:
    """Both backends' figures: SQLite in a scratch file, PostgreSQL (unless `pg_server` is None) in a scratch database."""
    backends: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pc-bench-sources-") as tmp:
        backends["sqlite"] = _child(f"sqlite:///{Path(tmp) / 'bench.sqlite3'}", objects, rounds)
    if pg_server:
        name = f"pc_bench_sources_{uuid.uuid4().hex[:8]}"
        _psql(pg_server, f"CREATE DATABASE {name}")
        try:
            backends["postgresql"] = _child(f"{pg_server.rstrip('/')}/{name}", objects, rounds)
        finally:
            _psql(pg_server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return {"objects": objects, "rounds": rounds, "backends": backends}


def record(result: dict[str, Any], meta: dict[str, Any]) -> None:
    """Put this measurement into tests/bench/results/latest.json as its `sources` scenario (the other scenarios' figures
    stay those of their own run), then rewrite latest.md and the README's table from it."""
    from tests.bench.report import LATEST, bars, markdown, readme_write, verdict

    latest = json.loads(LATEST.read_text())
    latest["results"]["sources"] = result
    latest["meta"]["sources"] = meta  # where this scenario's figures come from
    latest["bars"] = [{"bar": b, "measured": m, "target": t, "result": verdict(ok)} for b, m, t, ok in bars(latest["results"])]
    LATEST.write_text(json.dumps(latest, indent=1) + "\n")
    LATEST.with_suffix(".md").write_text(markdown(latest["meta"], latest["results"]))
    readme_write(latest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--record", action="store_true", help="write the figures into tests/bench/results/latest.json and the README")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(seed_and_time(*args.child)))
        return
    if args.record and args.no_pg:
        parser.error("--record measures both backends (drop --no-pg)")
    from tests.bench.server import machine_busy, own_cpu

    started, busy0, ours0 = time.perf_counter(), machine_busy(), own_cpu()
    result = measure(args.objects, args.rounds, None if args.no_pg else args.pg)
    wall = time.perf_counter() - started
    if args.json:
        print(json.dumps(result))
    else:
        for r in result["backends"].values():
            print(f"{r['backend']:<10} {r['objects']:>7} objects  search p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms  "
                  f"precision@8 {r['precision_at_8']}  no-match {r['no_match_correct']}/{r['no_match_total']}  "
                  f"({r['searches']} searches; seeding {r['seed_s']} s, indexing {r['index_s']} s)")
    if args.record:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "?"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "tools/sources", "tests/bench/sources.py"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        meta = {"command": "python -m tests.bench.sources --record", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "commit": commit + (" + uncommitted changes" if dirty else ""),
                "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}",
                "duration_s": round(wall, 1),
                # CPU the rest of the machine used meanwhile, the database server included (its work is the search's)
                "other_load_cores": round(max(0.0, machine_busy() - busy0 - (own_cpu() - ours0)) / wall, 2)}
        record(result, meta)
        print("recorded in tests/bench/results/latest.json (and latest.md, README.md)")


if __name__ == "__main__":
    main()
