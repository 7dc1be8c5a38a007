"""The reads, always scoped to the asking user where a user asks; someone else's id looks exactly like a missing one."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from itertools import islice
from typing import TYPE_CHECKING, Any

from django.db import connections, router
from django.db.models import CharField, Exists, F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Cast, Coalesce, Concat, Greatest, Length, Lower, StrIndex, Substr

from chat.infra.rows import column
from chat.models import Attachment, Conversation, Message, Run, UserPreferences
from chat.prompt.history import StoredMessage, plain_answer_messages
from chat.runs.store import run_for_user
from chat.userdata import attachments
from chat.userdata.blocks import placeholder_block

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MANIFEST_LIMIT = 20
PAYLOAD_SCAN_LIMIT = 200  # payloads older than the last 200 messages leave the manifest

__all__ = [
    "attachment_get", "conversation_by_thread", "conversation_get", "conversation_list", "conversation_messages",
    "conversation_running_run_id", "conversation_snippet",
    "history_exists", "history_window", "message_attachment_blocks", "payload_get", "payload_manifest",
    "run_assistant_message_id", "run_for_user", "run_stream_ended",
]


def conversation_list(*, user: User, query: str = "") -> QuerySet[Conversation]:
    """The user's conversations: the pinned ones first (the latest pinned first), then the most recently updated
    first; with `query`, only those whose title or any message contains it (case-insensitive), each annotated with
    `snippet`, where its first message that says it says it ("" for a title match only; see conversation_snippet).
    The conversations an eval ran as the user (`is_eval`) are not the user's own: never listed or found."""
    conversations = Conversation.objects.filter(owner=user, is_eval=False)
    if query:
        said = Message.objects.shown().filter(conversation=OuterRef("pk"), content__icontains=query)
        conversations = conversations.filter(Q(title__icontains=query) | Exists(said)).annotate(
            snippet=Coalesce(Subquery(_snippets(said, query)[:1]), Value("")))
    return conversations.order_by(F("pinned_at").desc(nulls_last=True), "-updated_at", "-id")


SNIPPET_BEFORE = 60  # characters of a matching message shown before what matched
SNIPPET_CHARS = 200  # characters of it read at most (the list never carries whole messages)


def _snippets(said: QuerySet[Message], query: str) -> QuerySet[Any, Any]:
    """Each message's excerpt around `query`, as `start|length|text` (start 1-based), cut in SQL."""
    found = StrIndex(Lower("content"), Lower(Value(query)))  # 0 where only the database's own case folding matched
    start = Greatest(found - SNIPPET_BEFORE, Value(1))
    text = Concat(Cast(start, CharField()), Value("|"), Cast(Length("content"), CharField()), Value("|"),
                  Substr("content", start, SNIPPET_CHARS), output_field=CharField())
    return said.order_by("id").annotate(snippet=text).values("snippet")


def conversation_snippet(raw: str) -> str:
    """A `snippet` annotation as the reader sees it: one line, "…" where the message goes on, markup left out."""
    if not raw:
        return ""
    start, length, text = raw.split("|", 2)
    words = _SNIPPET_MARKUP.sub(" ", text).split()
    before, after = int(start) > 1, int(start) - 1 + SNIPPET_CHARS < int(length)
    words = words[1 if before else 0:-1 if after else None] or words  # no word cut in half at either end
    return ("…" if before else "") + " ".join(words) + ("…" if after else "")


_SNIPPET_MARKUP = re.compile(r"\[\[[^\]]*\]\]|[`*|]|^\s*(?:#+|>)", re.M)  # tool-card markers, Markdown's marks


def conversation_get(*, user: User, conversation_id: int) -> Conversation | None:
    return Conversation.objects.filter(pk=conversation_id, owner=user).first()


def conversation_messages(*, conversation: Conversation, with_runs: bool = False, limit: int | None = None,
                          before: int | None = None) -> tuple[list[Message], bool]:
    """The conversation's messages in order with their attachments (replaced ones left out), and whether older ones
    exist: all of them, or the latest `limit` (older than message `before` when given); `with_runs` also reads
    each answer's run (its diagnostics) in the same query. Each answer's `earlier_versions` holds the answers a
    regenerate replaced before it (oldest first): the replaced answers after the same question that say something."""
    # each answer's sources (what its turn's searches found, kept with its run) in the same query, for everyone
    messages = conversation.messages.order_by("id").prefetch_related("attachments").annotate(run_sources=F("run__diagnostics__sources"))
    if before is not None:
        messages = messages.filter(id__lt=before)
    has_earlier = False
    if limit is not None:
        # the window's bounds from the shown messages' ids (a bounded read); the replaced ones between the message
        # before the window and its first are read with it: they are versions of messages in the window
        ids = list(messages.filter(replaced=False).order_by("-id").values_list("id", flat=True)[:limit + 1])
        if not ids:
            return [], False
        has_earlier = len(ids) > limit
        messages = messages.filter(id__gt=ids[limit] if has_earlier else 0, id__lte=ids[0])
    shown: list[Message] = []
    replaced: list[Message] = []  # replaced answers since the last message shown
    for msg in messages.select_related("run") if with_runs else messages:
        if msg.replaced:
            # an answer that failed before saying anything is no version to page back to (the export keeps it)
            if msg.role == Message.Role.ASSISTANT and msg.status != Message.Status.STREAMING and (msg.content or msg.tool_history):
                replaced.append(msg)
            continue
        # versions of this answer; before a question they were an edited question's answers: versions of nothing shown
        msg.earlier_versions = replaced if msg.role == Message.Role.ASSISTANT else []  # type: ignore[attr-defined]
        replaced = []
        shown.append(msg)
    return shown, has_earlier


def history_window(*, conversation_id: int, limit: int, upto_id: int | None = None) -> tuple[list[StoredMessage], list[dict[str, Any]]]:
    """The last `limit` messages and the manifest of the payloads among them, in one bounded query (a turn's reads)."""
    alias = router.db_for_read(Message)
    with connections[alias].cursor() as cursor:
        cursor.execute(_history_sql(alias, upto_id is not None),
                       [conversation_id, upto_id, limit] if upto_id is not None else [conversation_id, limit])
        rows = [(pk, role, content, _json(pm), _json(payloads), has) for pk, role, content, pm, payloads, has in cursor.fetchall()]
    rows.reverse()
    with_files = [pk for pk, role, *_, has in rows if has and role == Message.Role.USER]
    files = _attachment_blocks(with_files) if with_files else {}
    stored = [StoredMessage(role, content, pm or _plain_answer(role, content), files.get(pk, [])) for pk, role, content, pm, _, _ in rows]
    return stored, _manifest(payloads for _, role, _, _, payloads, _ in reversed(rows) if role == Message.Role.ASSISTANT and payloads)


@cache
def _history_sql(alias: str, upto: bool) -> str:
    """history_window's statement, written once per database: the ORM spent more time building this query than the
    database spent running it, on every turn. Whether a message has files is an index probe per row in the same
    query, so a conversation without attachments - nearly all turns - costs no second query."""
    q = connections[alias].ops.quote_name
    m, a = Message, Attachment

    def col(model: Any, name: str) -> str:
        return column(alias, model, name)

    return (f"SELECT m.{col(m, 'id')}, m.{col(m, 'role')}, m.{col(m, 'content')}, m.{col(m, 'provider_messages')}, "
            f"m.{col(m, 'payloads')}, EXISTS(SELECT 1 FROM {q(a._meta.db_table)} a WHERE a.{col(a, 'message')} = m.{col(m, 'id')}) "
            f"FROM {q(m._meta.db_table)} m WHERE m.{col(m, 'conversation')} = %s AND NOT m.{col(m, 'replaced')}"  # Message.objects.shown()
            + (f" AND m.{col(m, 'id')} < %s" if upto else "")
            + f" ORDER BY m.{col(m, 'id')} DESC LIMIT %s")


def _plain_answer(role: str, content: str) -> list[dict[str, Any]]:
    """The provider messages of an answer stored without them: its content was the model's one text block
    (chat.turns.persistence.provider_messages_stored)."""
    return plain_answer_messages(content) if role == Message.Role.ASSISTANT and content.strip() else []


def _json(value: Any) -> Any:
    """A JSON column as the ORM would give it (both SQLite and psycopg hand JSON over as text); "[]" needs no parser."""
    if value is None or value == "[]":
        return []
    return json.loads(value) if isinstance(value, str | bytes) else value


def _attachment_blocks(message_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """message id -> its attachments as history's placeholder blocks, in the order they were sent (one query)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for att in Attachment.objects.filter(message_id__in=list(message_ids)).order_by("position", "created_at"):
        assert att.message_id is not None
        out.setdefault(att.message_id, []).append(placeholder_block(att))
    return out


def message_attachment_blocks(*, message_id: int) -> list[dict[str, Any]]:
    """One message's attachments as history's placeholder blocks."""
    return _attachment_blocks([message_id]).get(message_id, [])


def attachment_get(*, user: User, attachment_id: str) -> Attachment | None:
    """The user's attachment (sent or not); someone else's id is None, exactly like a missing one."""
    return attachments.attachment_get(user=user, attachment_id=attachment_id)


def history_exists(*, conversation_id: int, before_id: int | None) -> bool:
    """True when the conversation has stored messages besides the current turn's two."""
    qs = Message.objects.shown().filter(conversation_id=conversation_id)
    if before_id is not None:
        qs = qs.filter(id__lt=before_id)
    return qs.count() > 1


def _recent_assistant(conversation_id: int) -> QuerySet[Message]:
    """Assistant messages among the conversation's last PAYLOAD_SCAN_LIMIT messages (a bounded scan)."""
    recent = Message.objects.shown().filter(conversation_id=conversation_id).order_by("-id").values("id")[:PAYLOAD_SCAN_LIMIT]
    return Message.objects.filter(id__in=recent, role=Message.Role.ASSISTANT).exclude(payloads=[])


def payload_manifest(*, conversation_id: int) -> list[dict[str, Any]]:
    """Summaries of the conversation's most recent payloads (bounded: never a scan of the whole conversation)."""
    return _manifest(_recent_assistant(conversation_id).order_by("-id").values_list("payloads", flat=True)[:MANIFEST_LIMIT])


def _manifest(newest_first: Iterable[list[dict[str, Any]] | None]) -> list[dict[str, Any]]:
    """Summaries (id, type, summary) of the newest MANIFEST_LIMIT messages' payloads, oldest first."""
    manifest: list[dict[str, Any]] = []
    for payloads in islice(newest_first, MANIFEST_LIMIT):
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


def run_stream_ended(*, run: Run, after_seq: int) -> bool:
    """True when a client that has seen `after_seq` already has the run's terminal event (nothing more will come)."""
    return run.status != Run.Status.RUNNING and run.last_seq > 0 and after_seq >= run.last_seq


async def run_assistant_message_id(*, run_id: str) -> int | None:
    """The run's assistant message (stored with the run at admission; None for an unknown run)."""
    return await Message.objects.filter(run_id=run_id, role=Message.Role.ASSISTANT).values_list("pk", flat=True).afirst()


async def conversation_by_thread(*, user: User, thread_id: str) -> Conversation | None:
    """The user's conversation a standard client names `thread_id` (another user's same name is another conversation)."""
    return await Conversation.objects.filter(owner=user, thread_id=thread_id).afirst()


async def conversation_running_run_id(*, conversation_id: int) -> str | None:
    """The conversation's running run (there is at most one), or None."""
    pk = await Run.objects.filter(conversation_id=conversation_id, status=Run.Status.RUNNING).values_list("pk", flat=True).afirst()
    return str(pk) if pk is not None else None


def preferences_get(*, user: User) -> UserPreferences:
    """The user's preferences (unsaved and empty when they never set any)."""
    return UserPreferences.objects.filter(user=user).first() or UserPreferences(user=user)


def preferences_instructions(*, user_id: int) -> str:
    """The user's standing instructions for the model ("" for none): one indexed read per turn."""
    alias = router.db_for_read(UserPreferences)
    with connections[alias].cursor() as cursor:
        cursor.execute(_preferences_sql(alias), [user_id])
        row = cursor.fetchone()
    return str(row[0]) if row else ""


@cache
def _preferences_sql(alias: str) -> str:
    """preferences_instructions' statement, written once per database (as history_window's: every turn runs it)."""
    q = connections[alias].ops.quote_name
    meta: Any = UserPreferences._meta
    return f"SELECT {q(meta.get_field('instructions').column)} FROM {q(meta.db_table)} WHERE {q(meta.get_field('user').column)} = %s"
