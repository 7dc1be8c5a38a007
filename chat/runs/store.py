"""The run rows as the run machinery sees them: ownership checks, heartbeats, the stale-run sweep, stored endings."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import transaction
from django.utils import timezone

from chat.conf import chat_settings
from chat.events import CancelledEvent, CompleteEvent, Envelope, ErrorEvent, RunEvent, complete_payload_build, error_event
from chat.events.errors import NotFound, error_code
from chat.models import ClientToolWait, Message, PendingApproval, Run, ToolCall

if TYPE_CHECKING:
    from django.contrib.auth.models import User

INTERRUPTED_MESSAGE = "The server process running this turn stopped; the partial answer was saved."
SWEEP_BATCH = 500


class RunRow(TypedDict):
    status: str
    heartbeat_at: datetime | None
    finished_at: datetime | None


async def run_for_user(*, user: User, run_id: str) -> Run:
    """The user's run; anything else (malformed, missing, someone else's) raises NotFound."""
    try:
        uuid.UUID(str(run_id))
    except ValueError:
        raise NotFound("run not found") from None
    run = await Run.objects.filter(pk=run_id, conversation__owner=user).afirst()
    if run is None:
        raise NotFound("run not found")
    return run


async def run_row(run_id: str) -> RunRow | None:
    """The fields that say whether a run is alive."""
    row = await Run.objects.filter(pk=run_id).values("status", "heartbeat_at", "finished_at").afirst()
    return None if row is None else RunRow(status=row["status"], heartbeat_at=row["heartbeat_at"], finished_at=row["finished_at"])


def age(when: datetime) -> float:
    """Seconds since `when`."""
    return (timezone.now() - when).total_seconds()


def runs_heartbeat(*, run_ids: list[str], process_id: str) -> int:
    """One heartbeat's database work: mark this process's running runs alive (one UPDATE for all of them), then
    sweep the runs of owners that stopped beating (runs_sweep); the number swept."""
    if run_ids:
        Run.objects.filter(pk__in=run_ids, status=Run.Status.RUNNING).update(heartbeat_at=timezone.now(), owner_process=process_id)
    return runs_sweep()


def runs_sweep(*, conversation_id: int | None = None) -> int:
    """Runs whose owner stopped beating become `interrupted`; their partial messages keep what was flushed."""
    cutoff = timezone.now() - timedelta(seconds=chat_settings.CHAT_STALE_AFTER)
    stale = Run.objects.filter(status=Run.Status.RUNNING, heartbeat_at__lt=cutoff)
    if conversation_id is not None:
        stale = stale.filter(conversation_id=conversation_id)
    ids = list(stale.values_list("pk", flat=True)[:SWEEP_BATCH])
    if not ids:
        return 0
    with transaction.atomic():
        n = Run.objects.filter(pk__in=ids, status=Run.Status.RUNNING).update(
            status=Run.Status.INTERRUPTED, finished_at=timezone.now(), error_code="interrupted",
            error_message="The server process running this turn stopped.",
        )
        Message.objects.filter(run_id__in=ids, status=Message.Status.STREAMING).update(status=Message.Status.INTERRUPTED)
        _tool_calls_interrupt(ids)
    return n


def _tool_calls_interrupt(run_ids: list[Any]) -> None:
    """Tool calls their dead process had started: reported interrupted, and never run again (nothing re-runs them)."""
    ToolCall.objects.filter(run_id__in=run_ids, status=ToolCall.Status.STARTED).update(
        status=ToolCall.Status.INTERRUPTED, error="The server process stopped while this tool ran; it was not run again.")


def runs_interrupt_all_running() -> int:
    """Startup sweep for a single-process deployment: nothing can still be running."""
    with transaction.atomic():
        ids = list(Run.objects.filter(status=Run.Status.RUNNING).values_list("pk", flat=True))
        Run.objects.filter(pk__in=ids).update(status=Run.Status.INTERRUPTED, finished_at=timezone.now(), error_code="interrupted")
        Message.objects.filter(run_id__in=ids, status=Message.Status.STREAMING).update(status=Message.Status.INTERRUPTED)
        _tool_calls_interrupt(ids)
    return len(ids)


def runs_recently_interrupted(*, seconds: float = 60) -> list[str]:
    """Runs swept in the last `seconds` (their logs may still lack a terminal event)."""
    since = timezone.now() - timedelta(seconds=seconds)
    rows = Run.objects.filter(status=Run.Status.INTERRUPTED, finished_at__gte=since).values_list("pk", flat=True)
    return [str(pk) for pk in rows[:SWEEP_BATCH]]


def run_last_seq_set(*, run_id: str, seq: int) -> None:
    Run.objects.filter(pk=run_id).update(last_seq=seq)


def approvals_answered(*, run_ids: set[str]) -> list[tuple[str, str, bool]]:
    """(run_id, tool_use_id, approved) of answered approvals of these runs."""
    rows = PendingApproval.objects.filter(run_id__in=run_ids, approved__isnull=False)
    return [(str(r), t, bool(a)) for r, t, a in rows.values_list("run_id", "tool_use_id", "approved")]


def tab_answers_given(*, run_ids: set[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(run_id, tool_use_id, result) of the answered frontend tool calls of these runs."""
    rows = ClientToolWait.objects.filter(run_id__in=run_ids, answered_at__isnull=False)
    return [(str(r), t, res or {}) for r, t, res in rows.values_list("run_id", "tool_use_id", "result")]


def run_closing_event(*, run_id: str) -> RunEvent | None:
    """The terminal event for the log of a run that ended without writing it (seq 0: the log numbers it); None
    while the run is still running, or when there is no such run."""
    run = Run.objects.select_related("assistant_message").filter(pk=run_id).first()
    if run is None or run.status == Run.Status.RUNNING:
        return None
    event = None if run.status == Run.Status.INTERRUPTED else run_terminal_event(run=run, staff=False, seq=0)
    return event if event is not None else run_interrupted_event(run=run, seq=0)


def run_terminal_event(*, run: Run, staff: bool, seq: int) -> RunEvent | None:
    """The terminal event of an ended run rebuilt from the database (its log expired or its owner died).

    None when the run has no assistant message to rebuild it from."""
    msg = run.assistant_message or Message.objects.filter(run=run, role=Message.Role.ASSISTANT).first()  # swept runs
    if msg is None:
        return None
    env = Envelope(str(run.pk), run.conversation_id)
    if run.status == Run.Status.COMPLETED:
        payload = complete_payload_build(
            message=msg.content, suggested_values=msg.suggested_values, suggested_actions=msg.suggested_actions,
            custom_payload=msg.custom_payload, tool_history=msg.tool_history, conversation_id=run.conversation_id,
            message_id=msg.pk, run_id=str(run.pk), usage={"input_tokens": run.input_tokens, "output_tokens": run.output_tokens},
            diagnostics=run.diagnostics if staff else None, action_result=(run.diagnostics or {}).get("action_result"),
            stop_reason=msg.stop_reason or None, sources=(run.diagnostics or {}).get("sources"),
        )
        return CompleteEvent.build(env, seq, payload=payload)
    if run.status == Run.Status.CANCELLED:
        return CancelledEvent.build(env, seq)
    return error_event(error_code(run.error_code), run.error_message or "The run did not finish.", run_id=env.run_id, seq=seq,
                       conversation_id=env.conversation_id)


def run_interrupted_event(*, run: Run, seq: int) -> ErrorEvent:
    """The `error` that closes the log of a run whose owner died."""
    return error_event(error_code(run.error_code, "interrupted"), run.error_message or INTERRUPTED_MESSAGE, run_id=str(run.pk),
                       seq=seq, conversation_id=run.conversation_id)
