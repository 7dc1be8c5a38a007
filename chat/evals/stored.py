"""Eval sets kept in the database (the admin's): a conversation made into a case, a stored set run like a file, its
runs recorded with their results, and what changed since the set's previous run.

A stored set is turned into the file format's `chat.evals.spec.EvalSet` (`stored_set_spec`), so it is checked and run
by the same code as a file. A run from the admin is a process of its own (`eval_run_start`: `python -m django
chat_eval --eval-run ID`): the runner applies `--provider` and `--model` as process-wide settings, which must not
change the answers of the people a web process serves. The command writes the run's progress and results.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.evals.results import CaseResult, EvalReport
from chat.evals.spec import EvalSet as SpecSet, EvalSpecError, eval_set_parse
from chat.models import Conversation, EvalCase, EvalCaseResult, EvalRun, EvalSet, Message

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

MAX_TURNS = 50  # the file format's limit on a case's turns
STALLED_AFTER = timedelta(minutes=15)  # a queued or running run with no progress for this long: its process is gone

__all__ = ["MAX_TURNS", "STALLED_AFTER", "RunDiff", "case_from_conversation", "eval_run_diff", "eval_run_previous", "eval_run_record",
           "eval_run_start", "eval_run_stalled", "stored_set_spec"]


class CaseRefused(Exception):
    """A conversation that cannot be a case (no page, too long, nothing asked, or the file format refuses it)."""


def _case_spec(case: EvalCase) -> dict[str, Any]:
    """A stored case in the file format."""
    spec: dict[str, Any] = {"name": case.name, "page": case.page, "context": case.context or {}, "user": case.user.get_username(),
                            "turns": case.turns, "expect": case.expect or {}}
    if case.judge:
        spec["judge"] = case.judge
    return spec


def stored_set_spec(eval_set: EvalSet) -> SpecSet:
    """The stored set as the file format's set, checked like a file (EvalSpecError naming the case and field)."""
    cases = [_case_spec(c) for c in eval_set.cases.select_related("user").order_by("id")]
    data = {"name": eval_set.name, "description": eval_set.description, "cases": cases}
    return eval_set_parse(data, source=f"eval set {eval_set.name!r}")


def _turn(message: Message, case_context: dict[str, Any]) -> dict[str, Any]:
    """A question of the conversation as a turn of the file format (a click on a server action names the action)."""
    turn: dict[str, Any] = {"message": message.content}
    if message.interaction_type == "action_executed":
        turn["action"] = str((message.action_metadata or {}).get("action_identifier") or "")
    elif message.interaction_type != "text_input":
        turn["interaction_type"] = message.interaction_type
    own = {k: v for k, v in (message.context or {}).items() if k != "current_page" and case_context.get(k) != v}
    if own:
        turn["context"] = own
    return turn


def case_from_conversation(conversation: Conversation, eval_set: EvalSet) -> tuple[EvalCase, bool]:
    """A case of `eval_set` made from `conversation`: its questions as turns, its page, context and owner, its last
    answer kept as the reference (expectations are left for staff to write: only "no error" holds until then).
    (case, False) when the set already has a case made from it; CaseRefused says why it cannot be one."""
    existing = eval_set.cases.filter(source_conversation=conversation).first()
    if existing is not None:
        return existing, False
    if not conversation.page:
        raise CaseRefused("it was on no page (a case runs on a registered page)")
    shown = list(conversation.messages.shown().order_by("id"))
    questions = [m for m in shown if m.role == Message.Role.USER]
    if not questions:
        raise CaseRefused("it has no question")
    if len(questions) > MAX_TURNS:
        raise CaseRefused(f"it has {len(questions)} questions; a case has at most {MAX_TURNS}")
    context = {k: v for k, v in (questions[0].context or {}).items() if k != "current_page"}
    answers = [m for m in shown if m.role == Message.Role.ASSISTANT]
    title = conversation.title or f"Conversation {conversation.pk}"
    name = f"{title[:180]} (#{conversation.pk})"
    data = {"name": name, "page": conversation.page, "context": context, "user": conversation.owner.get_username(),
            "turns": [_turn(m, context) for m in questions], "expect": {}}
    try:
        eval_set_parse({"name": eval_set.name, "cases": [data]}, source=f"conversation {conversation.pk}")
    except EvalSpecError as exc:
        raise CaseRefused("; ".join(p.split(": ", 1)[-1] for p in exc.problems)) from None
    case = EvalCase.objects.create(eval_set=eval_set, name=name, page=conversation.page, user=conversation.owner, context=context,
                                   turns=data["turns"], expect={}, reference_answer=answers[-1].content if answers else "",
                                   source_conversation=conversation)
    return case, True


def eval_run_stalled(run: EvalRun) -> bool:
    """A queued or running run that wrote no progress for STALLED_AFTER: its process stopped without saying so."""
    if run.status not in (EvalRun.Status.QUEUED, EvalRun.Status.RUNNING):
        return False
    return (run.heartbeat_at or run.created_at) < timezone.now() - STALLED_AFTER


def eval_run_start(eval_set: EvalSet, *, started_by: User | None, provider: str = "", model: str = "", judge_provider: str = "",
                   repeat: int = 1) -> EvalRun:
    """Queue a run of `eval_set` and start its process (`python -m django chat_eval --eval-run ID`, with this process's
    settings module and import path); it writes its progress and results to the run. A process that cannot start
    leaves the run `failed`, with why."""
    run = EvalRun.objects.create(eval_set=eval_set, provider=provider, model=model, judge_provider=judge_provider, repeat=repeat,
                                 started_by=started_by, total=eval_set.cases.count() * repeat)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))}
    module = getattr(settings, "SETTINGS_MODULE", None) or os.environ.get("DJANGO_SETTINGS_MODULE")
    if module:
        env["DJANGO_SETTINGS_MODULE"] = module
    command = [sys.executable, "-m", "django", "chat_eval", "--eval-run", str(run.pk)]
    try:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)  # not stopped with the web process's group
    except OSError as exc:
        EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.FAILED, error=f"the run's process did not start: {exc}",
                                                 finished_at=timezone.now())
        run.refresh_from_db()
        return run
    threading.Thread(target=process.wait, name=f"pagechat-eval-run-{run.pk}", daemon=True).start()  # reaped when it ends
    log.info("eval run %s of set %r started (pid %s)", run.pk, eval_set.name, process.pid)
    return run


def eval_run_record(run: EvalRun, report: EvalReport, results: Sequence[CaseResult]) -> None:
    """Write what the run found: its totals and each case's result (`results`: this set's cases of the report)."""
    cases = {c.name: c for c in run.eval_set.cases.all()}
    ran_in = {r.conversation_id for result in results for r in result.runs if r.conversation_id}
    kept = set(Conversation.objects.filter(pk__in=ran_in).values_list("pk", flat=True))  # a purge may have removed one meanwhile
    rows = []
    for result in results:
        last = result.runs[-1] if result.runs else None
        scored = [r for r in result.runs if r.status != "skipped"]
        costs = [r.cost_usd for r in scored]
        rows.append(EvalCaseResult(
            eval_run=run, case=cases.get(result.name), name=result.name, status=result.status,
            failures=[line for r in result.runs for line in r.failures], answer=last.answer if last else "",
            seconds=round(sum(r.seconds for r in result.runs), 3), tokens=sum(r.tokens.total for r in result.runs),
            cost_usd=None if not scored or any(c is None for c in costs) else Decimal(str(round(sum(c or 0 for c in costs), 8))),
            conversation_id=last.conversation_id if last and last.conversation_id in kept else None,
            detail=result.model_dump(mode="json")))
    passed = sum(r.status == "passed" for c in results for r in c.runs)
    failed = sum(r.status == "failed" for c in results for r in c.runs)
    skipped = sum(r.status == "skipped" for c in results for r in c.runs)
    with transaction.atomic():
        EvalCaseResult.objects.filter(eval_run=run).delete()
        EvalCaseResult.objects.bulk_create(rows)
        EvalRun.objects.filter(pk=run.pk).update(
            status=EvalRun.Status.COMPLETED, passed=passed, failed=failed, skipped=skipped,
            pass_rate=passed / (passed + failed) if passed + failed else None, provider_used=report.provider, model_used=report.model,
            finished_at=timezone.now(), heartbeat_at=timezone.now(), done=sum(len(c.runs) for c in results),
            report=report.model_copy(update={"cases": list(results), "sets": [run.eval_set.name]}).finish().model_dump(mode="json"))
    run.refresh_from_db()


def eval_run_previous(run: EvalRun) -> EvalRun | None:
    """The set's latest completed run before this one (what "since the previous run" compares with)."""
    return (EvalRun.objects.filter(eval_set_id=run.eval_set_id, status=EvalRun.Status.COMPLETED, created_at__lte=run.created_at)
            .exclude(pk=run.pk).order_by("-created_at", "-id").first())


@dataclass
class RunDiff:
    """What changed between two runs of a set, case by case (by name)."""

    previous: EvalRun | None
    newly_failing: list[str] = field(default_factory=list)  # passed before, fail now
    newly_passing: list[str] = field(default_factory=list)  # failed before, pass now
    still_failing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)  # cases the previous run did not have
    removed: list[str] = field(default_factory=list)  # cases the previous run had, this one not

    pass_rate_change: float | None = None  # this run's pass rate minus the previous run's (None: either scored nothing)


def eval_run_diff(run: EvalRun) -> RunDiff:
    """`run` against the set's previous completed run (an empty diff, `previous` None, when it is the first)."""
    previous = eval_run_previous(run)
    diff = RunDiff(previous=previous)
    if previous is None:
        return diff
    if run.pass_rate is not None and previous.pass_rate is not None:
        diff.pass_rate_change = run.pass_rate - previous.pass_rate
    now = dict(run.results.values_list("name", "status"))
    before = dict(previous.results.values_list("name", "status"))
    for name, status in now.items():
        if name not in before:
            diff.added.append(name)
        elif status == EvalCaseResult.Status.FAILED:
            (diff.newly_failing if before[name] == EvalCaseResult.Status.PASSED else diff.still_failing).append(name)
        elif status == EvalCaseResult.Status.PASSED and before[name] == EvalCaseResult.Status.FAILED:
            diff.newly_passing.append(name)
    diff.removed = [name for name in before if name not in now]
    return diff
