"""Evals in a host's own test suite (docs/evals.md): the `pagechat_eval` fixture and `eval_cases` for parametrizing.

Load it in the root conftest.py: `pytest_plugins = ["chat.evals.pytest_plugin"]` (or `pytest -p chat.evals.pytest_plugin`);
it needs pytest-django. The cases run through the real engine with the provider the test asks for (`offline`,
`scripted` with scripts enqueued on `chat.providers.scripted.ScriptedProvider`, or a real one), as their users, in the
test database - a transactional one, because a turn's work runs on threads with database connections of their own.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from chat.evals.results import EvalReport
    from chat.evals.spec import EvalSet


def eval_cases(*paths: str | Path) -> list[Any]:
    """One `pytest.param` per case of these files (its id `set/case`), each an EvalSet holding that case only:
    `@pytest.mark.parametrize("eval_case", eval_cases("evals/smoke.yaml"))`. A bad file fails the collection with the
    file, case and field."""
    from chat.evals.spec import eval_sets_load

    return [pytest.param(s.only(c.name), id=f"{s.name}/{c.name}") for s in eval_sets_load(paths) for c in s.cases]


class EvalFixture:
    """What `pagechat_eval` gives a test: `run` (the report) and `check` (fails the test with the report's table
    unless the pass rate is reached; skips it when every run was skipped)."""

    def _sets(self, source: Any, case: str | None) -> list[EvalSet]:
        from chat.evals.spec import EvalSet, eval_sets_load

        items = source if isinstance(source, Sequence) and not isinstance(source, str) else [source]
        paths = [i for i in items if not isinstance(i, EvalSet)]
        sets = [i for i in items if isinstance(i, EvalSet)] + (eval_sets_load(paths) if paths else [])
        if case is not None:
            holding = [s for s in sets if case in {c.name for c in s.cases}]
            if not holding:
                raise KeyError(f"no case named {case!r} in {', '.join(s.source or s.name for s in sets)}")
            sets = [s.only(case) for s in holding]
        return sets

    def run(self, source: Any, *, case: str | None = None, **options: Any) -> EvalReport:
        """Run the sets (files, directories or EvalSets; only the case named `case`), with `eval_run`'s options:
        provider, model, repeat, judge_provider, judge_model, min_pass_rate."""
        from chat.evals.runner import eval_run

        return eval_run(self._sets(source, case), **options)

    async def run_async(self, source: Any, *, case: str | None = None, **options: Any) -> EvalReport:
        """`run` for async tests."""
        from asgiref.sync import sync_to_async

        from chat.evals.runner import eval_run_async

        sets = await sync_to_async(self._sets)(source, case)
        return await eval_run_async(sets, **options)

    def check(self, source: Any, *, case: str | None = None, **options: Any) -> EvalReport:
        """`run`, then fail the test (with the table: why each run failed) unless the pass rate reached `min_pass_rate`."""
        return self.verdict(self.run(source, case=case, **options))

    async def check_async(self, source: Any, *, case: str | None = None, **options: Any) -> EvalReport:
        """`check` for async tests."""
        return self.verdict(await self.run_async(source, case=case, **options))

    @staticmethod
    def verdict(report: EvalReport) -> EvalReport:
        """Skip when no run was scored (every case judged, no judge), fail below the pass rate, else the report."""
        from chat.evals.reports import report_table

        if report.passed + report.failed == 0:
            reasons = sorted({r.skip_reason for c in report.cases for r in c.runs if r.skip_reason})
            pytest.skip("; ".join(reasons) or "no case ran")
        if not report.ok:
            pytest.fail(report_table(report, ascii_only=True), pytrace=False)
        return report


@pytest.fixture
def pagechat_eval(transactional_db: None) -> EvalFixture:
    """Run eval files or cases through the real engine, in the (transactional) test database."""
    return EvalFixture()
