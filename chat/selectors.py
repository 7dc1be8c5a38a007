"""The reads, always scoped to the asking user where a user asks; someone else's id looks exactly like a missing one."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from chat.models import Conversation, Message
from chat.prompt import StoredMessage
from chat.runs.store import run_for_user

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MANIFEST_LIMIT = 20
PAYLOAD_SCAN_LIMIT = 200  # payloads older than the last 200 messages leave the manifest

__all__ = [
    "conversation_get", "conversation_list", "conversation_messages", "history_exists", "history_list",
    "payload_get", "payload_manifest", "run_for_user",
]


def conversation_list(*, user: User) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user).order_by("-updated_at")


def conversation_get(*, user: User, conversation_id: int) -> Conversation | None:
    return Conversation.objects.filter(pk=conversation_id, owner=user).first()


def conversation_messages(*, conversation: Conversation) -> QuerySet[Message]:
    return conversation.messages.order_by("id")


def history_list(*, conversation_id: int, limit: int, upto_id: int | None = None) -> list[StoredMessage]:
    """The last `limit` messages (bounded: turn cost must not grow with the conversation)."""
    qs = Message.objects.filter(conversation_id=conversation_id)
    if upto_id is not None:
        qs = qs.filter(id__lt=upto_id)
    rows = list(qs.order_by("-id").values_list("role", "content", "provider_messages")[:limit])
    rows.reverse()
    return [StoredMessage(role, content, pm or []) for role, content, pm in rows]


def history_exists(*, conversation_id: int, before_id: int | None) -> bool:
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
