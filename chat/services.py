"""The writes, as entry points for the transports: `<entity>_<action>`, keyword-only.

The turn itself lives in chat/turns/ (admission, planning, the work, persistence); runs in chat/runs/.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from chat.events import error_event
from chat.events.errors import NotFound
from chat.models import ClientToolWait, Conversation, Message, PendingApproval, Run, UserPreferences
from chat.runs import manager
from chat.runs.store import run_for_user, run_terminal_event
from chat.turns.admission import turn_regenerate, turn_start
from chat.turns.gate import TurnStarted
from chat.turns.tab_tools import PAGE_LEFT
from chat.userdata import attachments, retention

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.core.files.uploadedfile import UploadedFile

    from chat.events import ChatToolResult, ToolResultBody
    from chat.models import Attachment

__all__ = [
    "TurnStarted", "approval_answer", "tab_answer", "tab_left",
    "attachment_discard", "attachment_upload", "conversation_create", "conversation_delete", "conversation_update",
    "conversations_delete_all", "message_mark", "run_cancel", "run_replay_or_resync", "turn_regenerate", "turn_start",
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


async def tab_answer(*, user: User, run_id: str, answer: ChatToolResult | ToolResultBody) -> None:
    """Record the tab's answer to a frontend tool call exactly once and hand it to the run. Only the run's user, only
    the tab the call names, only while the call waits; anything else is `not_found`."""
    run = await run_for_user(user=user, run_id=run_id)
    result = answer.model_dump(include={"output", "is_error", "payload", "state"})
    updated = await ClientToolWait.objects.filter(
        run=run, run__status=Run.Status.RUNNING, tool_use_id=answer.tool_use_id, tab_id=answer.tab_id, answered_at__isnull=True,
    ).aupdate(result=result, answered_at=timezone.now())
    if updated != 1:
        raise NotFound("no frontend tool call of this tab waits with that id")
    await manager.deliver_tab_answer(str(run.pk), answer.tool_use_id, result)


async def tab_left(*, user: User, tab_ids: set[str]) -> None:
    """The page of these tabs was left (their socket closed as pages close it): their waiting calls end with that error."""
    if not tab_ids:
        return
    result = {"output": f"Error: {PAGE_LEFT}.", "is_error": True}
    waits = ClientToolWait.objects.filter(run__conversation__owner=user, run__status=Run.Status.RUNNING, tab_id__in=tab_ids,
                                          answered_at__isnull=True)
    async for run_id, tool_use_id in waits.values_list("run_id", "tool_use_id"):
        if await ClientToolWait.objects.filter(run_id=run_id, tool_use_id=tool_use_id, answered_at__isnull=True).aupdate(
                result=result, answered_at=timezone.now()):
            await manager.deliver_tab_answer(str(run_id), tool_use_id, result)


async def run_replay_or_resync(*, user: User, run_id: str, after_seq: int) -> str:
    """When a run's log is gone: its stored terminal event for a fresh follower, else a `resync` error (as sent)."""
    run = await run_for_user(user=user, run_id=run_id)
    if run.status != Run.Status.RUNNING and after_seq == 0:
        run = await Run.objects.select_related("assistant_message").aget(pk=run.pk)
        event = await sync_to_async(run_terminal_event)(run=run, staff=bool(getattr(user, "is_staff", False)), seq=run.last_seq)
        if event is not None:
            return event.model_dump_json()
    return error_event("resync", "These events are no longer available; reload the conversation.", run_id=run_id).wire()


def conversation_create(*, user: User, title: str = "", page: str = "", pinned: bool = False, is_eval: bool = False) -> Conversation:
    """A new, empty conversation of the user; `is_eval`: one an eval runs as the user (kept out of the user's list)."""
    return Conversation.objects.create(owner=user, title=title[:200], page=page[:100], pinned_at=timezone.now() if pinned else None,
                                       is_eval=is_eval)


def conversation_update(*, user: User, conversation_id: int, title: str | None = None, pinned: bool | None = None) -> Conversation:
    """Rename and/or pin or unpin one of the user's conversations (None: unchanged). A rename counts as activity
    (updated_at); a pin does not, so unpinning puts the conversation back where it was."""
    conv = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conv is None:
        raise NotFound("conversation not found")
    fields = []
    if title is not None:
        conv.title = title[:200]
        fields += ["title", "updated_at"]
    if pinned is not None and pinned != conv.pinned:
        conv.pinned_at = timezone.now() if pinned else None
        fields.append("pinned_at")
    if fields:
        conv.save(update_fields=fields)
    return conv


def conversation_delete(*, user: User, conversation_id: int) -> None:
    """Delete one of the user's conversations with its runs, files and run logs."""
    removed = retention.conversations_remove(Conversation.objects.filter(pk=conversation_id, owner=user))
    if not removed.conversations:
        raise NotFound("conversation not found")


_UNSET: Any = object()


def message_mark(*, user: User, message_id: int, feedback: str | None = _UNSET, feedback_comment: str | None = _UNSET,
                 payload_outcome: str | None = _UNSET) -> Message:
    """Record the reader's feedback or their decision on the proposal, on one of their own assistant messages.

    Fields left out keep their value; "" or None clears one. Someone else's message is `not_found`.
    """
    msg = Message.objects.filter(pk=message_id, conversation__owner=user, role=Message.Role.ASSISTANT).first()
    if msg is None:
        raise NotFound("message not found")
    fields = []
    if feedback is not _UNSET:
        msg.feedback = feedback or ""
        fields.append("feedback")
    if feedback_comment is not _UNSET:
        msg.feedback_comment = (feedback_comment or "")[:2000]
        fields.append("feedback_comment")
    if payload_outcome is not _UNSET:
        msg.payload_outcome = payload_outcome or ""
        fields.append("payload_outcome")
    if fields:
        msg.save(update_fields=[*fields, "updated_at"])
    return msg


def attachment_upload(*, user: User, upload: UploadedFile) -> Attachment:
    """Store an image or PDF as the user's unsent attachment (judged by its bytes), or refuse it."""
    return attachments.attachment_create(user=user, upload=upload)


def attachment_discard(*, user: User, attachment_id: str) -> None:
    """Delete one of the user's unsent attachments; a sent, missing or someone else's one is `not_found`."""
    attachments.attachment_discard(user=user, attachment_id=attachment_id)


def conversations_delete_all(*, user: User) -> int:
    """Delete every conversation of the user (with runs, files and run logs); how many there were."""
    return retention.user_conversations_remove(user=user).conversations


def preferences_update(*, user: User, instructions: str) -> UserPreferences:
    """Store what the user wants every answer to take into account (their words, trimmed; "" clears them)."""
    preferences, _ = UserPreferences.objects.update_or_create(user=user, defaults={"instructions": instructions.strip()})
    return preferences
