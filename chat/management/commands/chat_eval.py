"""`manage.py chat_eval [PATH...] [--set NAME...] [--provider NAME] [--model M] [--repeat N] [--min-pass-rate R] [--json FILE]
[--junit FILE] [--judge-provider NAME]`: run eval sets through the real engine, print a table with a bar, write the
reports. `--set NAME` runs a set stored in the database (the admin's) and records the run (its progress, results and
the difference from the set's previous run show in the admin); `--eval-run ID` runs a run the admin queued, with its
options (the admin starts it so).

Exit codes: 0 the pass rate reached --min-pass-rate; 1 it did not (or no run was scored); 2 a bad file, user or option
(before any case runs).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from chat.evals.reports import report_json, report_junit, report_table
from chat.evals.runner import EvalProgress, eval_run
from chat.evals.spec import EvalSpecError, eval_sets_load
from chat.evals.stored import eval_run_record, stored_set_spec
from chat.models import EvalRun, EvalSet


def _rate(value: str) -> float:
    rate = float(value)
    if not 0 <= rate <= 1:
        raise ValueError(value)
    return rate


class Command(BaseCommand):
    help = ("Run eval sets (YAML or JSON files, or directories of them; docs/evals.md) through the real engine, each case as "
            "its user, and score the last turn of each. Exits 0 only when the pass rate reaches --min-pass-rate.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", metavar="PATH", help="eval files (.yaml, .yml, .json) or directories of them")
        parser.add_argument("--set", dest="stored_sets", action="append", default=[], metavar="NAME",
                            help="a set stored in the database (the admin's eval sets), by name; the run is recorded there (repeatable)")
        parser.add_argument("--eval-run", dest="eval_run_id", type=int, default=None, metavar="ID",
                            help="run the queued eval run ID (the admin's), with the options it was queued with")
        parser.add_argument("--provider", default=None, help="the provider that answers (a CHAT_PROVIDER name or dotted path); default CHAT_PROVIDER")
        parser.add_argument("--model", default=None, help="the model asked (CHAT_MODEL for this run)")
        parser.add_argument("--repeat", type=int, default=1, help="runs of each case (the pass rate is over all of them); default 1")
        parser.add_argument("--min-pass-rate", type=_rate, default=1.0, help="the pass rate (0 to 1) the run must reach to exit 0; default 1.0")
        parser.add_argument("--json", dest="json_path", default=None, metavar="FILE", help="write the JSON report here")
        parser.add_argument("--junit", dest="junit_path", default=None, metavar="FILE", help="write JUnit XML here")
        parser.add_argument("--judge-provider", default=None,
                            help="the provider that grades cases with a `judge`; default CHAT_EVAL_JUDGE_PROVIDER (none: they are skipped)")

    def handle(self, *args: Any, paths: list[str], provider: str | None, model: str | None, repeat: int, min_pass_rate: float,
               json_path: str | None, junit_path: str | None, judge_provider: str | None, stored_sets: list[str],
               eval_run_id: int | None, **options: Any) -> None:
        if repeat < 1:
            raise CommandError("--repeat must be at least 1", returncode=2)
        if not paths and not stored_sets and eval_run_id is None:
            raise CommandError("name eval files (PATH), stored sets (--set NAME) or a queued run (--eval-run ID)", returncode=2)
        recorded = self._recorded_runs(stored_sets, eval_run_id, provider=provider, model=model, repeat=repeat, judge_provider=judge_provider)
        if eval_run_id is not None:  # the options it was queued with
            queued = recorded[-1]
            provider, model, judge_provider, repeat = queued.provider or None, queued.model or None, queued.judge_provider or None, queued.repeat
        try:
            sets = eval_sets_load(paths) if paths else []
            stored = [stored_set_spec(run.eval_set) for run in recorded]
        except EvalSpecError as exc:
            self._failed(recorded, f"not a valid eval set; no case was run:\n{exc}")
            raise CommandError(f"not a valid eval set; no case was run:\n{exc}", returncode=2) from None
        names = [s.name for s in [*sets, *stored]]
        if len(set(names)) < len(names):
            self._failed(recorded, "two sets of this run have one name")
            raise CommandError(f"two sets have one name ({', '.join(sorted({n for n in names if names.count(n) > 1}))}): "
                               "results are recorded by set name", returncode=2)
        sets = [*sets, *stored]
        by_set = {run.eval_set.name: run for run in recorded}
        done: dict[str, int] = {}
        EvalRun.objects.filter(pk__in=[r.pk for r in recorded]).update(status=EvalRun.Status.RUNNING, started_at=timezone.now(),
                                                                       heartbeat_at=timezone.now())
        verbose = options.get("verbosity", 1) >= 1

        def progress(p: EvalProgress) -> None:
            if verbose:
                mark = {"passed": self.style.SUCCESS("pass"), "failed": self.style.ERROR("FAIL"), "skipped": self.style.WARNING("skip")}[p.run.status]
                self.stderr.write(f"[{p.done}/{p.total}] {mark} {p.set} / {p.case}" + (f" ({p.run.seconds:.2f}s)" if p.run.status != "skipped" else ""))

        async def progress_recorded(p: EvalProgress) -> None:
            progress(p)
            run = by_set.get(p.set)
            if run is not None:  # a stored set's progress, for the admin
                done[p.set] = done.get(p.set, 0) + 1
                await sync_to_async(EvalRun.objects.filter(pk=run.pk).update)(done=done[p.set], heartbeat_at=timezone.now())

        try:
            report = eval_run(sets, provider=provider, model=model, repeat=repeat, judge_provider=judge_provider,
                              min_pass_rate=min_pass_rate, on_progress=progress_recorded if recorded else progress)
        except EvalSpecError as exc:
            self._failed(recorded, f"not a valid eval set; no case was run:\n{exc}")
            raise CommandError(f"not a valid eval set; no case was run:\n{exc}", returncode=2) from None
        except ImportError as exc:
            self._failed(recorded, f"unknown provider: {exc}")
            raise CommandError(f"unknown provider: {exc}", returncode=2) from None
        except BaseException as exc:
            self._failed(recorded, f"the run stopped: {type(exc).__name__}: {exc}")
            raise
        for run in recorded:
            eval_run_record(run, report, [c for c in report.cases if c.set == run.eval_set.name])
        if json_path:
            Path(json_path).write_text(report_json(report), encoding="utf-8")
        if junit_path:
            Path(junit_path).write_text(report_junit(report), encoding="utf-8")
        encoding = getattr(self.stdout._out, "encoding", None) or sys.getdefaultencoding()
        self.stdout.write(report_table(report, ascii_only="utf" not in encoding.lower()), ending="")
        if not report.ok:
            rate = "no run was scored" if report.pass_rate is None else f"the pass rate {report.pass_rate:.1%} is below {report.min_pass_rate:.1%}"
            raise CommandError(rate, returncode=1)

    def _recorded_runs(self, names: list[str], eval_run_id: int | None, **options: Any) -> list[EvalRun]:
        """The eval runs to record: one queued now for each stored set named, and the queued run asked for."""
        runs = []
        for name in names:
            eval_set = EvalSet.objects.filter(name=name).first()
            if eval_set is None:
                known = ", ".join(EvalSet.objects.values_list("name", flat=True)[:20]) or "none"
                raise CommandError(f"no stored eval set {name!r} (stored: {known})", returncode=2)
            runs.append(EvalRun(eval_set=eval_set, provider=options["provider"] or "", model=options["model"] or "",
                                judge_provider=options["judge_provider"] or "", repeat=options["repeat"],
                                total=eval_set.cases.count() * options["repeat"]))
        if eval_run_id is not None:
            # claimed by one process only: the update that moves it out of `queued` is the claim
            claimed = EvalRun.objects.filter(pk=eval_run_id, status=EvalRun.Status.QUEUED).update(status=EvalRun.Status.RUNNING,
                                                                                                   started_at=timezone.now())
            if not claimed:
                raise CommandError(f"no queued eval run {eval_run_id}", returncode=2)
            runs.append(EvalRun.objects.select_related("eval_set").get(pk=eval_run_id))
        for run in runs:
            if run.pk is None:
                run.save()
        return runs

    @staticmethod
    def _failed(runs: list[EvalRun], why: str) -> None:
        """Tell the admin why these runs did not run to their end."""
        EvalRun.objects.filter(pk__in=[r.pk for r in runs]).update(status=EvalRun.Status.FAILED, error=why, finished_at=timezone.now())
