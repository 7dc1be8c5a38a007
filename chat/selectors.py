"""Reads, always scoped to the asking user; someone else's id looks exactly like a missing one."""
from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from chat.models import Conversation, Message, Run
from chat.prompt import StoredMessage

MANIFEST_LIMIT = 20
PAYLOAD_SCAN_LIMIT = 200  # payloads older than the last 200 messages leave the manifest


def conversation_list(*, user: Any) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user).order_by("-updated_at")


def conversation_get(*, user: Any, conversation_id: int) -> Conversation | None:
    return Conversation.objects.filter(pk=conversation_id, owner=user).first()


def conversation_messages(*, conversation: Conversation) -> QuerySet[Message]:
    return conversation.messages.order_by("id")


def message_by_client_id(*, user: Any, client_message_id: str, conversation_id: int | None) -> Any:
    """The run started by an earlier send with this client_message_id, as a TurnStarted, or None."""
    from chat.services import NotFound, TurnStarted

    qs = Message.objects.filter(client_message_id=client_message_id, conversation__owner=user, role=Message.Role.USER)
    if conversation_id is not None:
        qs = qs.filter(conversation_id=conversation_id)
    msg = qs.order_by("-id").first()
    if msg is None:
        return None
    run = Run.objects.filter(user_message=msg).order_by("-created_at").first()
    if run is None:
        raise NotFound("message has no run")
    return TurnStarted(run_id=str(run.pk), conversation_id=msg.conversation_id, created=False)


def history(*, conversation_id: int, limit: int, upto_id: int | None = None) -> list[StoredMessage]:
    """The last `limit` messages (bounded: turn cost must not grow with the conversation)."""
    qs = Message.objects.filter(conversation_id=conversation_id)
    if upto_id is not None:
        qs = qs.filter(id__lt=upto_id)
    rows = list(qs.order_by("-id").values_list("role", "content", "provider_messages")[:limit])
    rows.reverse()
    return [StoredMessage(role, content, pm or []) for role, content, pm in rows]


def has_history(*, conversation_id: int, before_id: int | None) -> bool:
    """True when the conversation has stored messages besides the current turn's two."""
    qs = Message.objects.filter(conversation_id=conversation_id)
    if before_id is not None:
        qs = qs.filter(id__lt=before_id)
    return qs.count() > 1


def _recent_assistant(conversation_id: int) -> QuerySet[Message]:
    """Assistant messages among the conversation's last PAYLOAD_SCAN_LIMIT messages (a bounded scan)."""
    recent = Message.objects.filter(conversation_id=conversation_id).order_by("-id").values("id")[:PAYLOAD_SCAN_LIMIT]
    return Message.objects.filter(id__in=recent, role=Message.Role.ASSISTANT).exclude(payloads=[])


def payload_manifest(*, conversation_id: int) -> list[dict[str, Any]]:
    """Summaries of the conversation's most recent payloads (bounded: never a scan of the whole conversation)."""
    rows = _recent_assistant(conversation_id).order_by("-id").values_list("payloads", flat=True)[:MANIFEST_LIMIT]
    manifest: list[dict[str, Any]] = []
    for payloads in rows:
        for p in payloads or []:
            manifest.append({"payload_id": p.get("payload_id"), "type": p.get("type"), "summary": p.get("summary", "")})
    return list(reversed(manifest[-MANIFEST_LIMIT:]))[:MANIFEST_LIMIT]


def payload_get(*, conversation_id: int, payload_id: str) -> dict[str, Any] | None:
    """A payload of this conversation by id (full data), or None."""
    rows = _recent_assistant(conversation_id).order_by("-id").values_list("payloads", flat=True)
    for payloads in rows:
        for p in payloads or []:
            if p.get("payload_id") == payload_id:
                return {k: p.get(k) for k in ("payload_id", "type", "data", "summary")}
    return None


async def run_for_user(*, user: Any, run_id: str) -> Run:
    """The user's run; anything else (malformed, missing, someone else's) raises NotFound."""
    from chat.services import NotFound

    try:
        uuid.UUID(str(run_id))
    except ValueError:
        raise NotFound("run not found") from None
    run = await Run.objects.filter(pk=run_id, conversation__owner=user).afirst()
    if run is None:
        raise NotFound("run not found")
    return run


def run_complete_payload(*, run: Run, user: Any) -> dict[str, Any] | None:
    """The terminal event of a finished run rebuilt from the database (when its log has expired)."""
    msg = run.assistant_message or Message.objects.filter(run=run, role=Message.Role.ASSISTANT).first()  # swept runs
    if msg is None:
        return None
    base = {"run_id": str(run.pk), "seq": run.last_seq, "conversation_id": run.conversation_id}
    if run.status == Run.Status.COMPLETED:
        payload = message_payload(msg)
        payload.update({"conversation_id": run.conversation_id, "message_id": msg.pk, "run_id": str(run.pk),
                        "usage": {"input_tokens": run.input_tokens, "output_tokens": run.output_tokens}})
        if getattr(user, "is_staff", False):
            payload["diagnostics"] = run.diagnostics
        return {"type": "complete", **base, "payload": payload}
    if run.status == Run.Status.CANCELLED:
        return {"type": "cancelled", **base}
    return {"type": "error", **base, "code": run.error_code or "error", "message": run.error_message or "The run did not finish."}


def message_payload(msg: Message) -> dict[str, Any]:
    """A stored message in the shape of `complete.payload` (without run fields)."""
    from chat.rendering import render_markdown

    return {
        "message": msg.content,
        "message_html": render_markdown(msg.content) if msg.role == Message.Role.ASSISTANT else "",
        "suggested_values": msg.suggested_values,
        "suggested_actions": msg.suggested_actions,
        "custom_payload": msg.custom_payload,
        "tool_history": msg.tool_history,
    }
