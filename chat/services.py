"""The writes, as entry points for the transports: `<entity>_<action>`, keyword-only.

The turn itself lives in chat/turns/ (admission, planning, the work, persistence); runs in chat/runs/.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.utils import timezone

from chat.errors import NotFound
from chat.events import error_event
from chat.models import Conversation, PendingApproval, Run
from chat.runs import manager
from chat.runs.store import run_for_user, run_terminal_event
from chat.turns.admission import TurnStarted, turn_start

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "TurnStarted", "approval_answer", "conversation_create", "conversation_delete", "conversation_rename",
    "run_cancel", "run_replay_or_resync", "turn_start",
]


async def run_cancel(*, user: User, run_id: str) -> None:
    """Cancel the user's run wherever it runs; someone else's run is `not_found`."""
    run = await run_for_user(user=user, run_id=run_id)
    if run.status == Run.Status.RUNNING:
        await manager.cancel(str(run.pk))


async def approval_answer(*, user: User, run_id: str, tool_use_id: str, approved: bool) -> None:
    """Record the user's answer exactly once and hand it to the run."""
    run = await run_for_user(user=user, run_id=run_id)
    updated = await PendingApproval.objects.filter(run=run, tool_use_id=tool_use_id, approved__isnull=True).aupdate(
        approved=approved, answered_at=timezone.now()
    )
    if updated != 1:
        raise NotFound("no pending approval with that id")
    await manager.deliver_approval(str(run.pk), tool_use_id, approved)


async def run_replay_or_resync(*, user: User, run_id: str, after_seq: int) -> str:
    """When a run's log is gone: its stored terminal event for a fresh follower, else a `resync` error (as sent)."""
    run = await run_for_user(user=user, run_id=run_id)
    if run.status != Run.Status.RUNNING and after_seq == 0:
        run = await Run.objects.select_related("assistant_message").aget(pk=run.pk)
        event = await sync_to_async(run_terminal_event)(run=run, staff=bool(getattr(user, "is_staff", False)), seq=run.last_seq)
        if event is not None:
            return event.model_dump_json()
    return error_event("resync", "These events are no longer available; reload the conversation.", run_id=run_id).wire()


def conversation_create(*, user: User, title: str = "", page: str = "") -> Conversation:
    return Conversation.objects.create(owner=user, title=title[:200], page=page[:100])


def conversation_rename(*, user: User, conversation_id: int, title: str) -> Conversation:
    conv = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conv is None:
        raise NotFound("conversation not found")
    conv.title = title[:200]
    conv.save(update_fields=["title", "updated_at"])
    return conv


def conversation_delete(*, user: User, conversation_id: int) -> None:
    deleted, _ = Conversation.objects.filter(pk=conversation_id, owner=user).delete()
    if not deleted:
        raise NotFound("conversation not found")
