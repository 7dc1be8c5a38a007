"""A user's data: export a conversation (JSON, Markdown), remove conversations with everything hanging off them
(messages, runs, tool calls, feedback, attachment files, run logs), and the retention purge.

Removal goes through Django's deletion collector, so whatever models later hang off a conversation or a
message (feedback rows, attachments with files) are removed and counted without this module naming them; a
FileField's file is deleted from its storage after the transaction commits.
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import DEFAULT_DB_ALIAS, models, transaction
from django.db.models.deletion import Collector
from django.utils import timezone
from django.utils.module_loading import import_string

from chat.conf import chat_settings
from chat.models import Conversation, Message, Run, UserPreferences
from chat.runs.log import run_log_from_settings

if TYPE_CHECKING:
    from django.core.files.storage import Storage

log = logging.getLogger(__name__)
ATTACHMENTS: str = "attachments"  # the related name of message attachments, where a version stores them
PURGE_BATCH_SIZE = 200  # conversations per transaction: bounded memory and short locks


# ---- export -------------------------------------------------------------------------------------


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _feedback(message: Message) -> Any:
    """The message's feedback as stored (None when there is none, or no feedback field in this version)."""
    value = getattr(message, "feedback", None)
    if isinstance(value, models.Model):
        return {f.name: f.value_from_object(value) for f in value._meta.concrete_fields if f.name not in ("id", "message")}
    return value


def _attachments(message: Message) -> list[dict[str, Any]]:
    """The message's attachments (name, type, size), when this version stores attachments."""
    related = getattr(message, ATTACHMENTS, None)
    if related is None or not hasattr(related, "all"):
        return []
    out = []
    for item in related.all():
        entry: dict[str, Any] = {"id": str(item.pk)}
        for name in ("filename", "name", "content_type", "size", "created_at"):
            if hasattr(item, name):
                value = getattr(item, name)
                entry[name] = _iso(value) if isinstance(value, datetime) else value
        out.append(entry)
    return out


def conversation_export(*, conversation: Conversation) -> dict[str, Any]:
    """The conversation as the export's JSON document: id, title, created_at, pinned and every message."""
    messages = Message.objects.filter(conversation=conversation).order_by("created_at", "id")
    if hasattr(Message, ATTACHMENTS):
        messages = messages.prefetch_related(ATTACHMENTS)
    return {
        "id": conversation.pk,
        "title": conversation.title,
        "created_at": _iso(conversation.created_at),
        "pinned": conversation.pinned,
        "messages": [
            {
                "role": m.role,
                "content": m.content,
                "created_at": _iso(m.created_at),
                "tool_history": m.tool_history,
                "payload": m.custom_payload,
                "feedback": _feedback(m),
                "attachments": _attachments(m),
                "replaced": m.replaced,  # an answer a regenerate replaced (an earlier version of the next one)
            }
            for m in messages
        ],
    }


async def user_conversations_export(*, user: Any) -> AsyncIterator[str]:
    """Every conversation of `user` as one JSON document, `{exported_at, username, preferences, conversations: [...]}`
    (each as conversation_export gives it, oldest first; `preferences` the user's standing instructions, "" for none),
    written a conversation at a time: memory holds one, never all."""
    ids = await sync_to_async(lambda: list(Conversation.objects.filter(owner=user).order_by("pk").values_list("pk", flat=True)))()
    instructions = await sync_to_async(lambda: UserPreferences.objects.filter(user=user).values_list("instructions", flat=True).first())()
    head = {"exported_at": timezone.now().isoformat(), "username": user.get_username(), "preferences": {"instructions": instructions or ""}}
    yield json.dumps(head, ensure_ascii=False)[:-1] + ', "conversations": ['
    written = 0
    for pk in ids:
        if (text := await sync_to_async(_exported)(pk, user)) is not None:  # None: deleted meanwhile
            yield ("," if written else "") + "\n" + text
            written += 1
    yield "\n]}\n"


def _exported(pk: int, user: Any) -> str | None:
    conversation = Conversation.objects.filter(pk=pk, owner=user).first()
    return None if conversation is None else json.dumps(conversation_export(conversation=conversation), ensure_ascii=False, default=str)


def _when(value: str | None) -> str:
    if not value:
        return ""
    return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M UTC")


def conversation_markdown(export: dict[str, Any], *, labels: dict[str, str] | None = None) -> str:
    """A readable transcript of an exported conversation (`labels`: role -> heading, e.g. translated)."""
    names = {"user": "You", "assistant": "Assistant", **(labels or {})}
    lines = [f"# {export['title'] or 'Conversation'}", "", f"Conversation {export['id']}, started {_when(export['created_at'])}.", ""]
    for m in export["messages"]:
        replaced = " (replaced)" if m.get("replaced") else ""
        lines += [f"## {names.get(m['role'], m['role'])}{replaced} · {_when(m['created_at'])}", "", m["content"] or "", ""]
        for call in m["tool_history"] or []:
            if isinstance(call, dict):
                lines.append(f"- tool `{call.get('name') or call.get('tool') or '?'}`")
        if m["payload"]:
            payload = m["payload"]
            lines.append(f"- card: {payload.get('summary') or payload.get('type') if isinstance(payload, dict) else payload}")
        for item in m["attachments"]:
            lines.append(f"- attachment: {item.get('filename') or item.get('name') or item.get('id')}")
        if m["feedback"] not in (None, "", {}):
            lines.append(f"- feedback: {m['feedback']}")
        if lines[-1] != "":
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# ---- removal ------------------------------------------------------------------------------------


@dataclass
class Removal:
    """What a removal took (or, in a dry run, would take): rows by model label, files, run logs."""

    conversations: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)
    run_logs: int = 0

    def add(self, other: Removal) -> None:
        self.conversations += other.conversations
        self.rows.update(other.rows)
        self.files += other.files
        self.run_logs += other.run_logs

    def describe(self) -> str:
        """One line: conversations, then each kind of row, files and run logs."""
        parts = [f"{n} {label}" for label, n in sorted(self.rows.items()) if label != Conversation._meta.label and n]
        parts += [f"{len(self.files)} attachment file(s)", f"{self.run_logs} run log(s)"]
        return f"{self.conversations} conversation(s): " + ", ".join(parts)


def _collect(conversations: Iterable[Conversation]) -> Collector:
    collector = Collector(using=DEFAULT_DB_ALIAS)
    collector.collect(list(conversations))
    return collector


def _file_fields(model: type[models.Model]) -> list[models.FileField]:
    return [f for f in model._meta.concrete_fields if isinstance(f, models.FileField)]


def _collected(collector: Collector) -> tuple[Counter[str], list[tuple[Storage, str]], list[str]]:
    """Rows by model label, files (storage, name) and run ids of what the collector would delete."""
    rows: Counter[str] = Counter()
    files: list[tuple[Storage, str]] = []
    run_ids: list[str] = []
    for model, instances in collector.data.items():
        rows[model._meta.label] += len(instances)
        for f in _file_fields(model):
            files += [(f.storage, name) for obj in instances if (name := getattr(obj, f.attname))]
        if model is Run:
            run_ids += [str(obj.pk) for obj in instances]
    for qs in collector.fast_deletes:
        model = qs.model
        fields = _file_fields(model)
        pks_and_files = list(qs.values_list("pk", *[f.attname for f in fields]))
        rows[model._meta.label] += len(pks_and_files)
        for row in pks_and_files:
            files += [(f.storage, name) for f, name in zip(fields, row[1:], strict=True) if name]
        if model is Run:
            run_ids += [str(row[0]) for row in pks_and_files]
    return rows, files, run_ids


def run_logs_delete(run_ids: list[str]) -> int:
    """Remove these runs' event logs from a shared run-log backend (a memory log has nothing outside its process)."""
    if not run_ids:
        return 0
    backend = run_log_from_settings()
    if not backend.shared:
        return 0

    async def go() -> int:
        try:
            return await backend.delete(run_ids)
        finally:
            await backend.close()

    return int(async_to_sync(go)())


def conversations_remove(queryset: models.QuerySet[Conversation], *, dry_run: bool = False) -> Removal:
    """Remove these conversations with everything hanging off them; in a dry run only count it."""
    with transaction.atomic():
        conversations = list(queryset.select_for_update() if not dry_run else queryset)
        if not conversations:
            return Removal()
        collector = _collect(conversations)
        rows, files, run_ids = _collected(collector)
        shared_log = bool(getattr(import_string(chat_settings.CHAT_RUN_LOG_BACKEND), "shared", False))
        report = Removal(conversations=len(conversations), rows=rows, files=[name for _, name in files],
                         run_logs=len(run_ids) if shared_log else 0)  # at most; the real run counts the logs that existed
        if dry_run:
            return report
        collector.delete()

        def after_commit() -> None:
            for storage, name in files:
                try:
                    storage.delete(name)
                except Exception:  # a missing file is already gone; anything else must not undo the removal
                    log.warning("could not delete file %s", name, exc_info=True)
            try:
                report.run_logs = run_logs_delete(run_ids)
            except Exception:  # the logs expire by themselves (CHAT_RUN_LOG_TTL)
                log.warning("could not delete %d run logs", len(run_ids), exc_info=True)

        transaction.on_commit(after_commit)
    return report


def user_conversations_remove(*, user: Any) -> Removal:
    """Remove every conversation of `user` (the tray's "Delete all conversations", staff's erasure action)."""
    total = Removal()
    while True:
        ids = list(Conversation.objects.filter(owner=user).order_by("pk").values_list("pk", flat=True)[:PURGE_BATCH_SIZE])
        if not ids:
            return total
        total.add(conversations_remove(Conversation.objects.filter(pk__in=ids)))


def purge_cutoff(*, days: float, now: datetime | None = None) -> datetime:
    """The instant before which a conversation's last activity must lie to be purged (a timestamp, not a date)."""
    return (now or timezone.now()) - timedelta(days=days)


def conversations_purge(*, days: float, dry_run: bool = False, batch_size: int = PURGE_BATCH_SIZE, now: datetime | None = None,
                        on_batch: Callable[[Removal], None] | None = None) -> Removal:
    """Remove conversations whose last activity is strictly older than now - `days`, in batches; safe to rerun."""
    cutoff = purge_cutoff(days=days, now=now)
    old = Conversation.objects.filter(updated_at__lt=cutoff).order_by("pk")
    total = Removal()
    after = 0
    while True:
        ids = list(old.filter(pk__gt=after).values_list("pk", flat=True)[:batch_size])
        if not ids:
            return total
        after = ids[-1]
        batch = conversations_remove(Conversation.objects.filter(pk__in=ids, updated_at__lt=cutoff), dry_run=dry_run)
        total.add(batch)
        if on_batch is not None:
            on_batch(batch)
