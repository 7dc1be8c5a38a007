"""`manage.py chat_eval PATH... [--provider NAME] [--model M] [--repeat N] [--min-pass-rate R] [--json FILE] [--junit FILE]
[--judge-provider NAME]`: run eval sets through the real engine, print a table with a bar, write the reports.

Exit codes: 0 the pass rate reached --min-pass-rate; 1 it did not (or no run was scored); 2 a bad file, user or option
(before any case runs).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.evals.reports import report_json, report_junit, report_table
from chat.evals.runner import EvalProgress, eval_run
from chat.evals.spec import EvalSpecError, eval_sets_load


def _rate(value: str) -> float:
    rate = float(value)
    if not 0 <= rate <= 1:
        raise ValueError(value)
    return rate


class Command(BaseCommand):
    help = ("Run eval sets (YAML or JSON files, or directories of them; docs/evals.md) through the real engine, each case as "
            "its user, and score the last turn of each. Exits 0 only when the pass rate reaches --min-pass-rate.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="eval files (.yaml, .yml, .json) or directories of them")
        parser.add_argument("--provider", default=None, help="the provider that answers (a CHAT_PROVIDER name or dotted path); default CHAT_PROVIDER")
        parser.add_argument("--model", default=None, help="the model asked (CHAT_MODEL for this run)")
        parser.add_argument("--repeat", type=int, default=1, help="runs of each case (the pass rate is over all of them); default 1")
        parser.add_argument("--min-pass-rate", type=_rate, default=1.0, help="the pass rate (0 to 1) the run must reach to exit 0; default 1.0")
        parser.add_argument("--json", dest="json_path", default=None, metavar="FILE", help="write the JSON report here")
        parser.add_argument("--junit", dest="junit_path", default=None, metavar="FILE", help="write JUnit XML here")
        parser.add_argument("--judge-provider", default=None,
                            help="the provider that grades cases with a `judge`; default CHAT_EVAL_JUDGE_PROVIDER (none: they are skipped)")

    def handle(self, *args: Any, paths: list[str], provider: str | None, model: str | None, repeat: int, min_pass_rate: float,
               json_path: str | None, junit_path: str | None, judge_provider: str | None, **options: Any) -> None:
        if repeat < 1:
            raise CommandError("--repeat must be at least 1", returncode=2)
        try:
            sets = eval_sets_load(paths)
        except EvalSpecError as exc:
            raise CommandError(f"not a valid eval set; no case was run:\n{exc}", returncode=2) from None
        verbose = options.get("verbosity", 1) >= 1

        def progress(p: EvalProgress) -> None:
            if verbose:
                mark = {"passed": self.style.SUCCESS("pass"), "failed": self.style.ERROR("FAIL"), "skipped": self.style.WARNING("skip")}[p.run.status]
                self.stderr.write(f"[{p.done}/{p.total}] {mark} {p.set} / {p.case}" + (f" ({p.run.seconds:.2f}s)" if p.run.status != "skipped" else ""))

        try:
            report = eval_run(sets, provider=provider, model=model, repeat=repeat, judge_provider=judge_provider,
                              min_pass_rate=min_pass_rate, on_progress=progress)
        except EvalSpecError as exc:
            raise CommandError(f"not a valid eval set; no case was run:\n{exc}", returncode=2) from None
        except ImportError as exc:
            raise CommandError(f"unknown provider: {exc}", returncode=2) from None
        if json_path:
            Path(json_path).write_text(report_json(report), encoding="utf-8")
        if junit_path:
            Path(junit_path).write_text(report_junit(report), encoding="utf-8")
        encoding = getattr(self.stdout._out, "encoding", None) or sys.getdefaultencoding()
        self.stdout.write(report_table(report, ascii_only="utf" not in encoding.lower()), ending="")
        if not report.ok:
            rate = "no run was scored" if report.pass_rate is None else f"the pass rate {report.pass_rate:.1%} is below {report.min_pass_rate:.1%}"
            raise CommandError(rate, returncode=1)
