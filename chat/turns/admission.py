"""Admitting a message: limits, ownership, the server-action token, idempotent resends; then its run starts.

Every run - so every model call - starts through `admitted` (chat.turns.gate), the one choke point of the limits: a new message, an
edit, a regenerate, Continue, a server action and a standard client's tool results, on every transport (websocket,
SSE, REST, AG-UI, the AI SDK). It counts the message (CHAT_RATE_LIMIT_PER_MINUTE) and checks the daily budgets
(CHAT_DAILY_*_BUDGET) before anything is stored; the runs in progress (CHAT_MAX_RUNNING_PER_USER) are counted in the
transaction that stores the run; and `Admission.start`, the only place a run's task starts, refuses a turn whose
limits were not checked. A conversation's generated title is one short model call of its first turn, admitted with it.

The acknowledgement (the run's first event, `status`) waits only for the user message, its run and the (empty,
streaming) assistant message the run answers into: one transaction.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.db import IntegrityError, connection, connections, router, transaction
from django.utils import timezone

from chat.conf import chat_settings
from chat.events import ChatSend
from chat.events.errors import BadRequest, Busy, CredentialsRevoked, NotFound
from chat.infra import metrics
from chat.infra.db_threads import ADMISSION
from chat.infra.rows import column, row_create, row_values
from chat.models import Conversation, Message, Run, UsedActionToken, action_stat_count
from chat.providers.base import Provider
from chat.runs import PROCESS_ID, manager
from chat.runs.store import runs_sweep
from chat.turns.clients import NO_EXTRAS, ClientTool, TurnExtras
from chat.turns.gate import Admission, TurnStarted, admitted, running_count
from chat.turns.observer import model_recorded
from chat.turns.persistence import TurnRecord, assistant_message_create
from chat.turns.planning import page_of, public_action_metadata
from chat.turns.titles import title_initial, title_is_generated
from chat.turns.verification import REFUSALS, access_verify, action_verify, client_calls_answered
from chat.userdata.attachments import attachments_claim

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)
Credentials = Callable[[], int | None]  # a socket's credential check: None while they hold, else its close code



async def turn_start(*, user: User, frame: ChatSend, extras: TurnExtras = NO_EXTRAS, credentials: Credentials | None = None) -> TurnStarted:
    """Store the user message and start its run; a resent client_message_id starts nothing new.

    `extras` (standard clients): the conversation named by the user's own `thread_id` (created on first use), the
    client's own tools, and its answers to the client tool calls that ended the conversation's last run.
    `credentials` (a socket's): checked in the admission's own database job before anything is read or stored;
    a close code raises CredentialsRevoked (one thread hop for both, on the path to the first event)."""
    arrived = time.perf_counter()
    if frame.replace_last is not None and frame.conversation_id is None:
        raise BadRequest("replace_last needs conversation_id")
    if frame.replace_last == "question" and not frame.message.strip():
        raise BadRequest("message: an edited question cannot be empty")
    if frame.replace_last is not None and frame.interaction_type == "action_executed":
        raise BadRequest("replace_last cannot resend a server action")
    if frame.replace_last == "answer":  # chat.send's regenerate: the same as the standard clients' regenerate
        await _credentials_verify(credentials)
        assert frame.conversation_id is not None
        if not 0 < frame.conversation_id < 2**63:
            raise NotFound("conversation not found")
        return await turn_regenerate(user=user, conversation_id=frame.conversation_id, context=frame.context or None,
                                     client_message_id=frame.client_message_id, language=frame.language,
                                     tab=frame.model_dump(include={"tab_id", "client_tools", "state"}, exclude_none=True))
    if len(frame.message) > chat_settings.CHAT_MAX_MESSAGE_CHARS:
        raise BadRequest(f"message is longer than {chat_settings.CHAT_MAX_MESSAGE_CHARS} characters", code="too_large")
    if frame.conversation_id is not None and not 0 < frame.conversation_id < 2**63:
        raise NotFound("conversation not found")  # what the database would say, without its overflow error
    if frame.client_message_id is None:
        # no id from the client: this send is a new message (no resend can match a server-made id)
        frame = frame.model_copy(update={"client_message_id": f"srv-{uuid.uuid4().hex}"})

    async def resent() -> TurnStarted | None:
        await _credentials_verify(credentials)  # revoked credentials do not even find an earlier run
        return await database_sync_to_async(turn_started_by_client_id)(user=user, client_message_id=frame.client_message_id,
                                                                       conversation_id=frame.conversation_id, thread_id=extras.thread_id)

    async def begin(admission: Admission, provider: Provider) -> TurnStarted:
        started, record = await ADMISSION.run(_turn_start_db)(user, frame, provider, extras, credentials, admission)
        if record is not None:
            admission.start(frame, provider, started, record)
            if chat_settings.CHAT_REDIS_URL:
                await manager.listen_for(started.run_id)
        return started

    started = await admitted(user, resent=resent, begin=begin)
    if started.created:
        metrics.TIME_TO_FIRST_EVENT.observe(time.perf_counter() - arrived)
    return started



def turn_started_by_client_id(*, user: User, client_message_id: str | None, conversation_id: int | None,
                              thread_id: str | None = None) -> TurnStarted | None:
    """The run an earlier send with this client_message_id started, or None (within the thread, for a named thread)."""
    if client_message_id is None:
        return None
    alias = router.db_for_read(Message)
    params: list[Any] = [client_message_id, user.pk, Message.Role.USER.value]
    if conversation_id is not None:
        params.append(conversation_id)
    if thread_id is not None:
        params.append(thread_id)
    with connections[alias].cursor() as cursor:
        cursor.execute(_resend_sql(alias, conversation_id is not None, thread_id is not None), params)
        row = cursor.fetchone()
    if row is None:
        return None
    found_conversation_id, run_id = row
    if run_id is None:
        raise NotFound("message has no run")
    return TurnStarted(run_id=str(Run._meta.pk.to_python(run_id)), conversation_id=int(found_conversation_id), created=False)


@cache
def _resend_sql(alias: str, in_conversation: bool, in_thread: bool) -> str:
    """turn_started_by_client_id's one statement, written once per database: every new conversation's first message
    asks it (a resend can only be found by its id there), and the ORM built two queries for it."""
    q = connections[alias].ops.quote_name
    m, c, r = Message, Conversation, Run

    def col(model: Any, name: str) -> str:
        return column(alias, model, name)

    latest_run = (f"SELECT r.{col(r, 'id')} FROM {q(r._meta.db_table)} r WHERE r.{col(r, 'user_message')} = m.{col(m, 'id')} "
                  f"ORDER BY r.{col(r, 'created_at')} DESC LIMIT 1")
    return (f"SELECT m.{col(m, 'conversation')}, ({latest_run}) FROM {q(m._meta.db_table)} m "
            f"INNER JOIN {q(c._meta.db_table)} c ON m.{col(m, 'conversation')} = c.{col(c, 'id')} "
            f"WHERE m.{col(m, 'client_message_id')} = %s AND c.{col(c, 'owner')} = %s AND m.{col(m, 'role')} = %s"
            + (f" AND m.{col(m, 'conversation')} = %s" if in_conversation else "")
            + (f" AND c.{col(c, 'thread_id')} = %s" if in_thread else "")
            + f" ORDER BY m.{col(m, 'id')} DESC LIMIT 1")


async def turn_regenerate(*, user: User, conversation_id: int, context: dict[str, Any] | None = None,
                          message_id: int | None = None, client_message_id: str | None = None, language: str | None = None,
                          tab: dict[str, Any] | None = None) -> TurnStarted:
    """Answer the conversation's last user message again: its last answer is deleted and a new run starts.

    `message_id`, when given, must be that last answer (a client regenerating something else is refused).
    `client_message_id`, when given (chat.send's `replace_last`), makes a resend start nothing new: the question
    takes that id, so the resend finds this run. `tab`: the sending tab's `tab_id`, `client_tools` and `state`."""
    async def resent() -> TurnStarted | None:
        if not client_message_id:
            return None
        return await database_sync_to_async(turn_started_by_client_id)(user=user, client_message_id=client_message_id, conversation_id=conversation_id)

    if (again := await resent()) is not None:  # found before the limits: _regenerate_db would regenerate again
        return again

    async def begin(admission: Admission, provider: Provider) -> TurnStarted:
        started, record, frame = await ADMISSION.run(_regenerate_db)(user, conversation_id, context, message_id, provider, client_message_id,
                                                                     language, admission, tab)
        admission.start(frame, provider, started, record)
        if chat_settings.CHAT_REDIS_URL:
            await manager.listen_for(started.run_id)
        return started

    return await admitted(user, resent=resent, begin=begin)


def _regenerate_db(user: User, conversation_id: int, context: dict[str, Any] | None, message_id: int | None,
                   provider: Provider, client_message_id: str | None = None, language: str | None = None,
                   admission: Admission | None = None, tab: dict[str, Any] | None = None) -> tuple[TurnStarted, TurnRecord, ChatSend]:
    """Store the regenerate's run (the runs in progress counted on `admission`, or on one of its own)."""
    try:
        with transaction.atomic():
            conversation = Conversation.objects.filter(pk=conversation_id, owner=user).first()
            if conversation is None:
                raise NotFound("conversation not found")
            shown = conversation.messages.shown()
            question = shown.filter(role=Message.Role.USER).exclude(interaction_type="tool_result").order_by("-id").first()
            if question is None:
                raise BadRequest("there is no answer to regenerate")
            answers = shown.filter(id__gt=question.pk)
            if message_id is not None and not answers.filter(pk=message_id, role=Message.Role.ASSISTANT).exists():
                raise BadRequest("only the last answer can be regenerated")
            frame = ChatSend.model_validate({
                "client_message_id": client_message_id or f"regenerate-{uuid.uuid4().hex}", "conversation_id": conversation.pk, "message": question.content,
                "context": question.context if context is None else context,
                # a server action is not run again (its token was spent): the model answers the click instead
                "interaction_type": "text_input" if question.interaction_type == "action_executed" else question.interaction_type,
                "language": language, **(tab or {}),
            })
            access_verify(user, frame)
            (admission or Admission(user)).running()
            answers.update(replaced=True)  # the answer (and any continuation of it): an earlier version of the new one
            if client_message_id:  # a resend of this regenerate finds its run through the question
                question.client_message_id = client_message_id
                question.save(update_fields=["client_message_id", "updated_at"])
            run = Run.objects.create(
                conversation=conversation, user_message=question, provider=provider.name,
                model=model_recorded(provider),
                owner_process=PROCESS_ID, heartbeat_at=timezone.now(),
            )
            answer_id = assistant_message_create(conversation_id=conversation.pk, run_id=str(run.pk))
    except IntegrityError:  # the conversation's one running run
        raise Busy() from None
    record = TurnRecord(run_id=str(run.pk), conversation_id=conversation.pk, user_message_id=question.pk, assistant_message_id=answer_id,
                        client_tools=tab_tools_of(frame), tab_id=frame.tab_id)
    return TurnStarted(run_id=str(run.pk), conversation_id=conversation.pk, created=True), record, frame


async def _credentials_verify(credentials: Credentials | None) -> None:
    """CredentialsRevoked if the socket's credentials no longer hold (for the paths that do not store a turn here)."""
    if credentials is not None and (code := await ADMISSION.run(credentials)()) is not None:
        raise CredentialsRevoked(code)


def _turn_start_db(user: User, frame: ChatSend, provider: Provider, extras: TurnExtras,
                   credentials: Credentials | None = None, admission: Admission | None = None) -> tuple[TurnStarted, TurnRecord | None]:
    """Store the user message and its run (the acknowledgement waits for exactly this, so it is kept minimal); the runs
    in progress are counted on `admission` (or on one of its own)."""
    if credentials is not None and (code := credentials()) is not None:
        raise CredentialsRevoked(code)  # a turn acts as the user: never on revoked credentials
    conversation = None
    if frame.conversation_id is not None:
        conversation = _conversation_owned(user, frame.conversation_id)
        if conversation is None:
            raise NotFound("conversation not found")
    elif extras.thread_id is not None:
        conversation = Conversation.objects.filter(owner=user, thread_id=extras.thread_id).first()
    access_verify(user, frame)
    nonce, refusal = action_verify(user, frame, conversation)
    for attempt in (1, 2, 3):
        try:
            return _turn_insert(user, frame, provider, conversation, nonce, refusal, extras, admission or Admission(user))
        except IntegrityError:
            if nonce is not None and UsedActionToken.objects.filter(nonce=nonce).exists():
                # a second click (or a replay): answered in the conversation, never run again
                nonce, refusal = None, f"{REFUSALS['used']} Nothing was done again."
                continue
            again = turn_started_by_client_id(user=user, client_message_id=frame.client_message_id, conversation_id=frame.conversation_id,
                                              thread_id=extras.thread_id)
            if again is not None:
                return again, None
            if conversation is None:  # a new conversation has no running run: a bug or bad data, never "busy"
                raise
            if attempt < 3 and runs_sweep(conversation_id=conversation.pk):
                continue  # this sweep took the slot from a run whose process died
            if not Run.objects.filter(conversation=conversation, status=Run.Status.RUNNING).exists():
                # Free anyway: its run ended since the insert (its own end, or the heartbeat's sweep on another thread,
                # which may have won this one's race). After the last attempt it is not the one-running-run
                # constraint: a bug or bad data, never "busy" (clients would retry forever).
                if attempt < 3:
                    continue
                raise
            raise Busy() from None
    raise Busy()


def _turn_insert(user: User, frame: ChatSend, provider: Provider, conversation: Conversation | None,
                 nonce: str | None, refusal: str | None = None, extras: TurnExtras = NO_EXTRAS,
                 admission: Admission | None = None) -> tuple[TurnStarted, TurnRecord | None]:
    # A plain message to an existing conversation: the unique (conversation, client_message_id) constraint
    # turns a resend's insert into the IntegrityError _turn_start_db answers with the original run.
    plain = conversation is not None and frame.replace_last is None and nonce is None and not extras.tool_results
    with transaction.atomic():
        if not plain:
            # A resend racing the original (a reconnect to another process) must find it, not store it again:
            # the unique constraint covers one conversation only, so serialise on (user, client_message_id).
            _client_message_lock(user.pk, frame.client_message_id)
        running = running_count(user.pk)
        if not plain or running >= chat_settings.CHAT_MAX_RUNNING_PER_USER:
            # a resend finds its run before anything here could refuse it ("too many") or store it again
            again = turn_started_by_client_id(user=user, client_message_id=frame.client_message_id, conversation_id=frame.conversation_id,
                                              thread_id=extras.thread_id)
            if again is not None:
                return again, None
        (admission or Admission(user)).running(running)
        if nonce is not None:
            UsedActionToken.objects.create(nonce=nonce)
        retitle = False
        if frame.replace_last == "question" and conversation is not None:  # an edit: the last question and its answer go
            question = conversation.messages.shown().filter(role=Message.Role.USER).order_by("-id").first()
            if question is None:
                raise BadRequest("replace_last: the conversation has no question yet")
            if question.interaction_type != "text_input":  # a click (a chip, a button) is not words the user can rewrite
                raise BadRequest("replace_last: only a typed question can be edited")
            # the first question edited: the title it was generated from goes with it (a name the user gave stays)
            first = not conversation.messages.shown().filter(role=Message.Role.USER, id__lt=question.pk).exclude(
                interaction_type="tool_result").exists()
            retitle = first and title_is_generated(conversation, question.content)
            # deleted with all that follows it (the answer's earlier versions too) and its files, unlike a regenerate's
            # answer: the user replaced their own words, perhaps to take a file back
            conversation.messages.filter(id__gte=question.pk).delete()
            if retitle:  # provisional until the answer's title replaces it (titles.conversation_title_set)
                Conversation.objects.filter(pk=conversation.pk).update(title=title_initial(frame.message))
        answered = client_calls_answered(conversation, extras)
        created = conversation is None
        if conversation is None:
            conversation_id = row_create(Conversation, {
                "owner_id": user.pk, "title": title_initial(frame.message), "page": str(frame.context.get("current_page") or "")[:100],
                "thread_id": extras.thread_id})
        else:
            conversation_id = conversation.pk
        user_message_id = row_create(Message, {
            "conversation_id": conversation_id, "role": Message.Role.USER, "content": frame.message,
            "interaction_type": "tool_result" if answered else frame.interaction_type, "context": frame.context,
            "action_metadata": public_action_metadata(frame), "client_message_id": frame.client_message_id,
            "provider_messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": a.tool_use_id, "content": a.output} for a in answered
            ]}] if answered else [],
        })
        if frame.attachments:  # the sender's unsent uploads become this message's (else not_found: nothing is stored)
            attachments_claim(user=user, ids=frame.attachments, message=Message(pk=user_message_id, conversation_id=conversation_id))
        run_id = str(row_create(Run, {
            "conversation_id": conversation_id, "user_message_id": user_message_id, "provider": provider.name,
            "model": provider.model_name(chat_settings.CHAT_MODEL)[:100], "owner_process": PROCESS_ID, "heartbeat_at": timezone.now(),
        }))
        # in the same transaction: one commit fewer than storing it from the run, and the id standard clients'
        # streams start with (AG-UI, the AI SDK) exists from the acknowledgement on
        answer_id = assistant_message_create(conversation_id=conversation_id, run_id=run_id)
        if frame.interaction_type == "action_executed" and frame.action_metadata is not None:
            action_stat_count(page=page_of(frame).name, action=frame.action_metadata.action_identifier,
                              fields=("clicked", "rejected") if refusal else ("clicked",))
    record = TurnRecord(run_id=run_id, conversation_id=conversation_id, user_message_id=user_message_id, conversation_created=created,
                        retitle=retitle, assistant_message_id=answer_id, client_tools=extras.client_tools or tab_tools_of(frame),
                        tab_id=frame.tab_id, answered_calls=answered, action_refusal=refusal)
    return TurnStarted(run_id=run_id, conversation_id=conversation_id, created=True), record


def tab_tools_of(frame: ChatSend) -> tuple[ClientTool, ...]:
    """The frontend tools the sending tab offers (`chat.send.client_tools`), run in that tab while the run waits."""
    return tuple(ClientTool(name=t.name, description=t.description, parameters=t.parameters, title=t.title,
                            requires_approval=t.requires_approval, in_tab=True) for t in frame.client_tools or ())


def _conversation_owned(user: User, conversation_id: int) -> Conversation | None:
    """The user's conversation (its id, owner, title, page and thread id; the rest loads if read), or None."""
    row = row_values(Conversation, _CONVERSATION_COLUMNS, {"id": conversation_id, "owner": user.pk})
    return Conversation.from_db(router.db_for_read(Conversation), _CONVERSATION_COLUMNS, row) if row is not None else None


_CONVERSATION_COLUMNS = ("id", "owner_id", "title", "page", "thread_id")


def _client_message_lock(user_id: int, client_message_id: str | None) -> None:
    """Hold a transaction-scoped lock on (user, client_message_id); SQLite's IMMEDIATE transactions already serialise."""
    if connection.vendor == "postgresql" and client_message_id is not None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [user_id % 2**31, client_message_id])
