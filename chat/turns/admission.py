"""Admitting a message: limits, ownership, the server-action token, idempotent resends; then its run starts.

The acknowledgement (the run's first event, `status`) waits only for the user message and its run row.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, close_old_connections, connection, connections, transaction
from django.utils import timezone

from chat.actions import TokenInvalid, action_token_verify
from chat.conf import chat_settings
from chat.errors import ActionRejected, BadRequest, Busy, NotFound, RateLimited
from chat.events import ChatSend, StatusEvent
from chat.limits import limiter
from chat.models import Conversation, Message, Run, UsedActionToken
from chat.providers.base import Provider
from chat.providers.factory import provider_get
from chat.runs import PROCESS_ID, manager
from chat.runs.store import runs_sweep
from chat.turns.persistence import TurnRecord
from chat.turns.planning import page_of, public_action_metadata
from chat.turns.work import turn_execute

if TYPE_CHECKING:
    from django.contrib.auth.models import User



@dataclass
class TurnStarted:
    """A started (or, for a resent client_message_id, an earlier) run to follow from seq 0."""

    run_id: str
    conversation_id: int
    created: bool


async def turn_start(*, user: User, frame: ChatSend) -> TurnStarted:
    """Store the user message and start its run; a resent client_message_id starts nothing new."""
    if len(frame.message) > chat_settings.CHAT_MAX_MESSAGE_CHARS:
        raise BadRequest(f"message is longer than {chat_settings.CHAT_MAX_MESSAGE_CHARS} characters", code="too_large")
    if frame.conversation_id is not None and not 0 < frame.conversation_id < 2**63:
        raise NotFound("conversation not found")  # what the database would say, without its overflow error
    # a resend (reconnect) is never rate limited: it starts nothing. Looked up front only when the limit
    # is hit; otherwise _turn_start_db finds it in the same thread hop and its count is given back.
    try:
        await limiter.check_message(user.pk)
    except RateLimited:
        resent = await sync_to_async(turn_started_by_client_id)(user=user, client_message_id=frame.client_message_id,
                                                                conversation_id=frame.conversation_id)
        if resent is not None:
            return resent
        raise
    provider = provider_get()
    # shielded: a caller cancelled meanwhile (socket closed, SSE client gone) must not leave a stored
    # message with a run that no task runs; the run starts and a resend or resume finds it
    started = await asyncio.shield(_turn_begin(user, frame, provider))
    if not started.created:
        await limiter.uncount_message(user.pk)
    return started


def turn_started_by_client_id(*, user: User, client_message_id: str, conversation_id: int | None) -> TurnStarted | None:
    """The run an earlier send with this client_message_id started, or None."""
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


# Acknowledgements get a database thread of their own, so a new message never queues behind other runs'
# flushes and saves on Django's single sync thread (they only contend for the database's own write lock).
_ACK_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-ack")


def _on_ack_thread[**P, R](fn: Callable[P, R]) -> Callable[P, Any]:
    def job(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()  # this thread is outside Django's request cycle: recycle broken/expired connections
        return fn(*args, **kwargs)

    return sync_to_async(job, thread_sensitive=False, executor=_ACK_EXECUTOR)


def db_connections_close() -> None:
    """Close the acknowledgement thread's connections (tests drop their database afterwards)."""
    _ACK_EXECUTOR.submit(connections.close_all).result(timeout=10)


async def _turn_begin(user: User, frame: ChatSend, provider: Provider) -> TurnStarted:
    started, record = await _on_ack_thread(_turn_start_db)(user, frame, provider)
    if record is None:
        return started
    handle = manager.create(started.run_id, started.conversation_id, user.pk)
    handle.append(StatusEvent.wire, message="Thinking…")  # the ack: the user message is stored
    manager.start(handle, turn_execute(handle, user, frame, provider, record))
    if chat_settings.CHAT_REDIS_URL:
        await manager.listen_for(started.run_id)
    return started


def _turn_start_db(user: User, frame: ChatSend, provider: Provider) -> tuple[TurnStarted, TurnRecord | None]:
    """Store the user message and its run (the acknowledgement waits for exactly this, so it is kept minimal)."""
    conversation = None
    if frame.conversation_id is not None:
        conversation = Conversation.objects.filter(pk=frame.conversation_id, owner=user).first()
        if conversation is None:
            raise NotFound("conversation not found")
    nonce = _action_verify(user, frame, conversation)
    for attempt in (1, 2):
        try:
            return _turn_insert(user, frame, provider, conversation, nonce)
        except IntegrityError:
            if nonce is not None and UsedActionToken.objects.filter(nonce=nonce).exists():
                raise ActionRejected("action rejected: this button was already used") from None
            again = turn_started_by_client_id(user=user, client_message_id=frame.client_message_id, conversation_id=frame.conversation_id)
            if again is not None:
                return again, None
            # the running slot may be held by a run whose process died: sweep it once and try again
            if attempt == 1 and conversation is not None and runs_sweep(conversation_id=conversation.pk):
                continue
            raise Busy() from None
    raise Busy()


def _turn_insert(user: User, frame: ChatSend, provider: Provider, conversation: Conversation | None,
                 nonce: str | None) -> tuple[TurnStarted, TurnRecord | None]:
    with transaction.atomic():
        # A resend racing the original (a reconnect to another process) must find it, not store it again:
        # the unique constraint covers one conversation only, so serialise on (user, client_message_id).
        _client_message_lock(user.pk, frame.client_message_id)
        again = turn_started_by_client_id(user=user, client_message_id=frame.client_message_id, conversation_id=frame.conversation_id)
        if again is not None:
            return again, None
        running = Run.objects.filter(conversation__owner=user, status=Run.Status.RUNNING).count()
        if running >= chat_settings.CHAT_MAX_RUNNING_PER_USER and runs_sweep():  # dead processes' runs do not count
            running = Run.objects.filter(conversation__owner=user, status=Run.Status.RUNNING).count()
        if running >= chat_settings.CHAT_MAX_RUNNING_PER_USER:
            raise RateLimited("too many runs in progress")
        if nonce is not None:
            UsedActionToken.objects.create(nonce=nonce)
        created = conversation is None
        if conversation is None:
            page = str(frame.context.get("current_page") or "")[:100]
            conversation = Conversation.objects.create(owner=user, title=_title(frame.message), page=page)
        user_msg = Message.objects.create(
            conversation=conversation, role=Message.Role.USER, content=frame.message,
            interaction_type=frame.interaction_type, context=frame.context,
            action_metadata=public_action_metadata(frame), client_message_id=frame.client_message_id,
        )
        run = Run.objects.create(
            conversation=conversation, user_message=user_msg, provider=provider.name,
            model=chat_settings.CHAT_MODEL if not provider.is_offline else "offline",
            owner_process=PROCESS_ID, heartbeat_at=timezone.now(),
        )
    record = TurnRecord(run_id=str(run.pk), conversation_id=conversation.pk, user_message_id=user_msg.pk, conversation_created=created)
    return TurnStarted(run_id=str(run.pk), conversation_id=conversation.pk, created=True), record


def _client_message_lock(user_id: int, client_message_id: str) -> None:
    """Hold a transaction-scoped lock on (user, client_message_id); SQLite's IMMEDIATE transactions already serialise."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [user_id % 2**31, client_message_id])


def _action_verify(user: User, frame: ChatSend, conversation: Conversation | None) -> str | None:
    """For a server action: the token's nonce if it is valid for exactly this request; raises ActionRejected."""
    meta = frame.action_metadata
    if frame.interaction_type != "action_executed":
        return None
    if meta is None:
        raise ActionRejected("action_executed needs action_metadata")
    if page_of(frame).server_action(meta.action_identifier) is None:
        raise ActionRejected("this action is not available on this page")
    if conversation is None:
        raise ActionRejected("action rejected: it belongs to a conversation")
    try:
        claims = action_token_verify(
            meta.token, user_id=user.pk, conversation_id=conversation.pk, action=meta.action_identifier,
            data=meta.action_data, max_age=chat_settings.CHAT_ACTION_TOKEN_MAX_AGE,
        )
    except TokenInvalid as exc:
        raise ActionRejected(f"action rejected: {exc}") from None
    return claims.nonce


def _title(message: str) -> str:
    first = " ".join(message.split())
    return first[:77] + "…" if len(first) > 80 else first
