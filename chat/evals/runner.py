"""Running eval sets through the real engine: each turn is a `chat.send` started by `chat.services.turn_start`, the
websocket's own entry point (the limits, budgets, permissions, server-action tokens and persistence of every turn),
and followed to its `complete` or `error` the way the websocket follows it.

Each run of a case is a conversation of its own, owned by the case's user and marked `is_eval` (kept out of the
user's own list). `eval_run_async` is the service (the command, the pytest fixture and staff tools call it);
`eval_run` is its synchronous twin for code that is not in an event loop.
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import get_user_model
from django.test.utils import override_settings
from django.utils import timezone

from chat import services
from chat.conf import chat_settings
from chat.evals.expectations import expectations_check
from chat.evals.judge import Judge, provider_class
from chat.evals.results import CaseResult, CaseRun, EvalReport, ExpectationResult, Status, Tokens, TurnResult, cost_sum
from chat.evals.spec import EvalCase, EvalSet, EvalSpecError, EvalTurn
from chat.events import TERMINAL_TYPES, ActionMetadata, ChatSend
from chat.events.errors import RateLimited, ServiceError, error_code
from chat.models import Run
from chat.providers.base import Provider
from chat.providers.factory import provider_get
from chat.runs import ResyncRequired, manager

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

TURN_TIMEOUT = 300.0  # seconds a turn may take before the eval cancels its run (it then ends with error `timeout`)
CANCEL_GRACE = 10.0  # seconds a timed-out run is given to end once cancelled
RATE_LIMIT_PATIENCE = 120.0  # seconds a turn waits, in all, for the user's message rate to allow it again
NO_JUDGE = "a judged case, and no judge provider (--judge-provider or CHAT_EVAL_JUDGE_PROVIDER)"
_TOOL_MARKER = re.compile(r"\[\[tool:\d+\]\]")


def _readable(text: str) -> str:
    """An answer as a reader sees it: the tool cards' [[tool:N]] markers and the blank lines around them left out."""
    return re.sub(r"\n{3,}", "\n\n", _TOOL_MARKER.sub("", text)).strip()


@dataclass(frozen=True)
class EvalProgress:
    """Reported after each run of a case: `done` of `total` runs."""

    done: int
    total: int
    set: str
    case: str
    run: CaseRun


ProgressCallback = Callable[[EvalProgress], Awaitable[None] | None]


def eval_run(sets: EvalSet | Sequence[EvalSet], **options: Any) -> EvalReport:
    """`eval_run_async` for synchronous callers (a command, a test, a worker thread); not from inside an event loop."""
    return async_to_sync(eval_run_async)(sets, **options)


async def eval_run_async(
    sets: EvalSet | Sequence[EvalSet], *, provider: str | None = None, model: str | None = None, repeat: int = 1,
    judge_provider: str | Provider | None = None, judge_model: str | None = None, min_pass_rate: float = 1.0,
    on_progress: ProgressCallback | None = None, turn_timeout: float = TURN_TIMEOUT,
) -> EvalReport:
    """Run every case of `sets` `repeat` times, one after the other, and report.

    `provider`/`model`: CHAT_PROVIDER/CHAT_MODEL for the duration of the run (Django settings: process-wide, so run it in
    a process of its own - the command, a worker - not in a process serving users). `judge_provider`: a provider name or
    instance for the cases with a `judge` (default CHAT_EVAL_JUDGE_PROVIDER; none: those cases are skipped), asked for
    `judge_model` (default CHAT_EVAL_JUDGE_MODEL, else CHAT_MODEL as configured). `on_progress` is called (awaited if it
    returns an awaitable) after each run, in the event loop: a synchronous callback must not touch the database.
    Raises EvalSpecError (a case's user does not exist or is inactive), ImportError (an unknown provider) or ValueError
    (bad options) before any case runs."""
    sets = [sets] if isinstance(sets, EvalSet) else list(sets)
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    if not 0 <= min_pass_rate <= 1:
        raise ValueError("min_pass_rate must be between 0 and 1")
    if provider is not None:
        provider_class(provider)
    if isinstance(judge_provider, str):
        provider_class(judge_provider)
    users = await sync_to_async(eval_users_load)(sets)
    judged_by = judge_provider if judge_provider is not None else (chat_settings.CHAT_EVAL_JUDGE_PROVIDER or None)
    judge_model = judge_model or chat_settings.CHAT_EVAL_JUDGE_MODEL or chat_settings.CHAT_MODEL  # before --model applies
    overrides = {name: value for name, value in (("CHAT_PROVIDER", provider), ("CHAT_MODEL", model)) if value}
    with override_settings(**overrides) if overrides else contextlib.nullcontext():
        judge = (Judge.named(judged_by, judge_model) if isinstance(judged_by, str) else Judge(judged_by, judge_model)) if judged_by else None
        answering = provider_get()
        report = EvalReport(
            sets=[s.name for s in sets], sources=[s.source for s in sets if s.source], provider=answering.name,
            model=answering.model_name(chat_settings.CHAT_MODEL),
            judge_provider=judge.provider.name if judge else None, judge_model=judge.model if judge else None,
            repeat=repeat, min_pass_rate=min_pass_rate, started_at=timezone.now(),
        )
        began = time.perf_counter()
        total, done = sum(len(s.cases) for s in sets) * repeat, 0
        for eval_set in sets:
            for case in eval_set.cases:
                runs: list[CaseRun] = []
                for attempt in range(1, repeat + 1):
                    run = await case_run(case, users[case.user], eval_set=eval_set, attempt=attempt, judge=judge, turn_timeout=turn_timeout)
                    runs.append(run)
                    done += 1
                    if on_progress is not None:
                        called = on_progress(EvalProgress(done, total, eval_set.name, case.name, run))
                        if inspect.isawaitable(called):
                            await called
                report.cases.append(_case_result(eval_set, case, runs))
        report.seconds = round(time.perf_counter() - began, 3)
    return report.finish()


def eval_users_load(sets: Sequence[EvalSet]) -> dict[str, User]:
    """Every case's user by username; EvalSpecError naming each case whose user does not exist or is inactive."""
    model = get_user_model()
    field = model.USERNAME_FIELD
    names = {case.user for s in sets for case in s.cases}
    found = {getattr(u, field): u for u in model.objects.filter(**{f"{field}__in": names})}
    problems = []
    for s in sets:
        for i, case in enumerate(s.cases):
            user = found.get(case.user)
            if user is None or not user.is_active:
                why = f"no user {case.user!r}" if user is None else f"the user {case.user!r} is inactive (no turn of theirs is admitted)"
                problems.append(f"{s.source or s.name}: case {json.dumps(case.name, ensure_ascii=False)} (cases[{i}]), user: {why}")
    if problems:
        raise EvalSpecError(problems)
    return found


async def case_run(case: EvalCase, user: User, *, eval_set: EvalSet, attempt: int = 1, judge: Judge | None = None,
                   turn_timeout: float = TURN_TIMEOUT) -> CaseRun:
    """One run of a case, in a new eval conversation of `user`: its turns in order, then its expectations on the last
    turn and the judge's verdict. A judged case without a judge is skipped (not run)."""
    if case.judge is not None and judge is None:
        return CaseRun(attempt=attempt, status="skipped", skip_reason=NO_JUDGE)
    conversation = await sync_to_async(services.conversation_create)(
        user=user, title=f"Eval {eval_set.name}: {case.name}", page=case.page, is_eval=True)
    turns: list[TurnResult] = []
    problem = ""
    for i, turn in enumerate(case.turns):
        last = i == len(case.turns) - 1
        frame = _frame(case, turn, conversation.pk, turns[-1] if turns else None)
        if isinstance(frame, str):
            problem = f"turn {i + 1} of {len(case.turns)}: {frame}"
            break
        result = await turn_run(user, frame, turn, timeout=turn_timeout, patient=not (last and case.expect.error == "rate_limited"))
        turns.append(result)
        if result.error is not None and not last:
            problem = f"turn {i + 1} of {len(case.turns)} ended with error {result.error!r}: {result.error_message}"
            break
    expectations: list[ExpectationResult] = []
    judged = None
    if problem:
        expectations.append(ExpectationResult(name="turns", passed=False, why=problem))
    else:
        expectations = expectations_check(case.expect, turns[-1])
        if case.judge is not None and judge is not None:
            judged = await judge.grade(case.judge, turns)
    passed = all(e.passed for e in expectations) and (judged is None or judged.passed)
    tokens = Tokens()
    for t in turns:
        tokens = tokens.plus(t.tokens)
    end = turns[-1] if turns else None
    return CaseRun(
        attempt=attempt, status="passed" if passed else "failed", conversation_id=conversation.pk, expectations=expectations,
        judge=judged, turns=turns, answer=end.answer if end else "", tools=end.tools if end else [], error=end.error if end else None,
        seconds=round(sum(t.seconds for t in turns), 3), tokens=tokens, cost_usd=cost_sum([t.cost_usd for t in turns]),
    )


def _frame(case: EvalCase, turn: EvalTurn, conversation_id: int, previous: TurnResult | None) -> ChatSend | str:
    """The turn's `chat.send`; a server action is the button the previous answer offered, with its data and token.
    A string says why the turn cannot be sent."""
    message, metadata = turn.message, None
    if turn.action is not None:
        buttons = [a for a in ((previous.payload or {}).get("suggested_actions") or [] if previous else []) if a.get("handler") == "server"]
        button = next((b for b in buttons if b.get("action") == turn.action), None)
        if button is None:
            offered = ", ".join(repr(b.get("action")) for b in buttons) or "none"
            return f"the previous answer offers no server action {turn.action!r} (it offers: {offered})"
        metadata = ActionMetadata(action_identifier=turn.action, action_data=button.get("data"), token=button.get("token"))
        message = message or str(button.get("label") or turn.action)
    return ChatSend(client_message_id=f"eval-{uuid.uuid4().hex}", conversation_id=conversation_id, message=message,
                    context=case.page_context(turn), interaction_type=turn.interaction_type, action_metadata=metadata,
                    language=turn.language)


async def turn_run(user: User, frame: ChatSend, turn: EvalTurn, *, timeout: float = TURN_TIMEOUT, patient: bool = True) -> TurnResult:
    """Send one turn as `user` and follow its run to the terminal event, answering tool approvals with `turn.approve`.
    A refusal (`forbidden`, `budget_exceeded`, ...) is the turn's error; `patient`: a `rate_limited` refusal is waited
    out (up to RATE_LIMIT_PATIENCE) rather than taken as the answer."""
    result = TurnResult(message=frame.message, interaction_type=frame.interaction_type, action=turn.action,
                        conversation_id=frame.conversation_id)
    began = time.perf_counter()
    try:
        started = await _turn_start(user, frame, patient=patient)
    except ServiceError as exc:  # refused before any run: nothing was spent
        result.error, result.error_message, result.cost_usd = exc.code, exc.message, 0.0
        result.seconds = round(time.perf_counter() - began, 3)
        return result
    result.run_id = started.run_id
    followed = _Followed(user, started.run_id, turn.approve)
    try:
        async with asyncio.timeout(timeout):
            terminal = await followed.to_the_end()
    except TimeoutError:
        await services.run_cancel(user=user, run_id=started.run_id)
        with contextlib.suppress(TimeoutError):  # the run ends (its answer saved) before the next turn of this user starts
            async with asyncio.timeout(CANCEL_GRACE):
                await followed.to_the_end()
        terminal = {"type": "error", "code": "timeout", "message": f"no answer within {timeout:g} s: the eval cancelled the run"}
    result.seconds = round(time.perf_counter() - began, 3)
    _terminal_read(result, terminal, "".join(followed.texts), followed.tools)
    row = await Run.objects.filter(pk=started.run_id).values(
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd").afirst()
    if row is not None:
        result.tokens = Tokens(input=row["input_tokens"], output=row["output_tokens"], cache_read=row["cache_read_tokens"],
                               cache_write=row["cache_write_tokens"])
        result.cost_usd = float(row["cost_usd"]) if row["cost_usd"] is not None else None
    return result


class _Followed:
    """A run followed as the websocket follows it: its text and tools so far, its approvals answered."""

    def __init__(self, user: User, run_id: str, approve: bool) -> None:
        self.user, self.run_id, self.approve = user, run_id, approve
        self.texts: list[str] = []
        self.tools: list[str] = []
        self.seq = 0

    async def to_the_end(self) -> dict[str, Any] | None:
        """Follow from the last event seen to the terminal one (None if the events end without one)."""
        try:
            async for seq, data in manager.follow(self.run_id, self.seq):
                self.seq = seq
                event = json.loads(data)
                kind = event.get("type")
                if kind == "text_delta":
                    self.texts.append(event["text"])
                elif kind == "tool_start":
                    self.tools.append(event["tool"])
                elif kind == "tool_approval":
                    await services.approval_answer(user=self.user, run_id=self.run_id, tool_use_id=event["tool_use_id"], approved=self.approve)
                elif kind in TERMINAL_TYPES:
                    return dict(event)
        except ResyncRequired:  # its events are gone: the stored terminal event
            return dict(json.loads(await services.run_replay_or_resync(user=self.user, run_id=self.run_id, after_seq=0)))
        return None


def _terminal_read(result: TurnResult, terminal: dict[str, Any] | None, streamed: str, tools: list[str]) -> None:
    """What the terminal event says into `result`: the answer's parts, or the error (with the text streamed before it)."""
    if terminal is not None and terminal.get("type") == "complete":
        payload: dict[str, Any] = terminal["payload"]
        result.payload = payload
        result.answer = _readable(str(payload.get("message") or ""))
        result.tools = [str(t.get("tool_name")) for t in payload.get("tool_history") or []] or tools
        result.suggested_values = list(payload.get("suggested_values") or [])
        result.actions = [str(a.get("action")) for a in payload.get("suggested_actions") or [] if a.get("handler") == "server"]
        result.payload_type = (payload.get("custom_payload") or {}).get("type")
        result.action_result = payload.get("action_result")
        return
    result.answer = _readable(streamed)
    result.tools = tools
    if terminal is None:
        result.error, result.error_message = "internal", "the run's events ended without a terminal event"
    elif terminal.get("type") == "cancelled":
        result.error, result.error_message = "cancelled", "the run was cancelled"
    else:
        result.error, result.error_message = error_code(str(terminal.get("code"))), str(terminal.get("message") or "")


async def _turn_start(user: User, frame: ChatSend, *, patient: bool) -> services.TurnStarted:
    """`services.turn_start`, waiting out `rate_limited` refusals when `patient` (an eval sends faster than a person)."""
    deadline = time.monotonic() + RATE_LIMIT_PATIENCE
    while True:
        try:
            return await services.turn_start(user=user, frame=frame)
        except RateLimited as exc:
            wait = float(exc.retry_after or 1)
            if not patient or time.monotonic() + wait > deadline:
                raise
            log.info("eval: the user's message rate is reached; sending again in %g s", wait)
            await asyncio.sleep(wait)


def _case_result(eval_set: EvalSet, case: EvalCase, runs: list[CaseRun]) -> CaseResult:
    scored = [r for r in runs if r.status != "skipped"]
    status: Status = "skipped" if not scored else "passed" if all(r.status == "passed" for r in scored) else "failed"
    return CaseResult(set=eval_set.name, name=case.name, status=status, passed=status == "passed", runs=runs)
