"""The only writers: start a turn, run it (emitting every event), persist it, finish it."""
from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, close_old_connections, connections, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from chat import selectors
from chat.actions import TokenInvalid, action_token_sign, action_token_verify
from chat.agent.loop import run_agent_loop
from chat.agent.types import (
    AgentComplete,
    AgentIteration,
    AgentTextDelta,
    AgentTool,
    AgentToolApproval,
    AgentToolComplete,
    AgentToolProgress,
    AgentToolStart,
    LoopState,
    ToolContext,
)
from chat.events import ChatSend
from chat.models import Conversation, Message, PendingApproval, Run, ToolCall, UsedActionToken
from chat.prompt import PromptInput, StoredMessage, history_build, system_prompt_build
from chat.providers.base import Provider, ProviderError
from chat.rendering import render_markdown
from chat.runs import PROCESS_ID, RunHandle, manager
from pages.registry import BUILTIN_CLIENT_ACTIONS, PageSpec, ServerActionResult, registry as page_registry
from payloads.parsing import MarkerStreamFilter, parse_blocks
from payloads.registry import assign_payload_id, registry as payload_registry
from tools.registry import registry as tool_registry
from tools.services import tool_overrides

log = logging.getLogger(__name__)
SUGGESTION_MARKERS = ("SUGGESTED_VALUES:", "SUGGESTED_ACTIONS:")
HISTORY_MESSAGE_LIMIT = 60


class ServiceError(Exception):
    """A refusal with a wire `code` and a message safe to show the user."""

    code = "internal"

    def __init__(self, message: str = "", *, code: str | None = None):
        super().__init__(message)
        self.message = message or self.__class__.__doc__ or self.code
        if code:
            self.code = code


class NotFound(ServiceError):
    """Not found."""

    code = "not_found"


class Busy(ServiceError):
    """A run is already in progress in this conversation."""

    code = "busy"


class RateLimited(ServiceError):
    """Too many requests; slow down."""

    code = "rate_limited"


class ActionRejected(ServiceError):
    """This action cannot be run."""

    code = "action_rejected"


class BadRequest(ServiceError):
    """The request is not valid."""

    code = "bad_frame"


@dataclass
class TurnStarted:
    """A started (or, for a resent client_message_id, an earlier) run to follow from seq 0."""

    run_id: str
    conversation_id: int
    created: bool


# ---- providers ----------------------------------------------------------------------------------

_providers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Provider]]" = weakref.WeakKeyDictionary()


def provider_get() -> Provider:
    """The configured provider, one instance per event loop (HTTP clients are bound to their loop)."""
    per_loop = _providers.setdefault(asyncio.get_running_loop(), {})
    provider = per_loop.get(settings.CHAT_PROVIDER)
    if provider is None:
        cls = import_string(settings.CHAT_PROVIDER)
        provider = per_loop[settings.CHAT_PROVIDER] = cls.from_settings(settings)
    return provider


# ---- starting a turn ----------------------------------------------------------------------------


async def turn_start(*, user: Any, frame: ChatSend) -> TurnStarted:
    """Store the user message and start its run; a resent client_message_id starts nothing new."""
    if len(frame.message) > settings.CHAT_MAX_MESSAGE_CHARS:
        raise BadRequest(f"message is longer than {settings.CHAT_MAX_MESSAGE_CHARS} characters", code="too_large")
    from chat.limits import limiter

    if frame.conversation_id is not None and not 0 < frame.conversation_id < 2**63:
        raise NotFound("conversation not found")  # what the database would say, without its overflow error
    # a resend (reconnect) is never rate limited: it starts nothing. Looked up front only when the limit
    # is hit; otherwise _turn_start_db finds it in the same thread hop and its count is given back.
    try:
        await limiter.check_message(user.pk)
    except RateLimited:
        resent = await sync_to_async(selectors.message_by_client_id)(user=user, client_message_id=frame.client_message_id, conversation_id=frame.conversation_id)
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


# Acknowledgements get a database thread of their own, so a new message never queues behind other runs'
# flushes and saves on Django's single sync thread (they only contend for the database's own write lock).
_ACK_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-ack")


def _on_ack_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
    def job(*args: Any) -> Any:
        close_old_connections()  # this thread is outside Django's request cycle: recycle broken/expired connections
        return fn(*args)

    return sync_to_async(job, thread_sensitive=False, executor=_ACK_EXECUTOR)


def db_connections_close() -> None:
    """Close the acknowledgement thread's connections (tests drop their database afterwards)."""
    _ACK_EXECUTOR.submit(connections.close_all).result(timeout=10)


async def _turn_begin(user: Any, frame: ChatSend, provider: Provider) -> TurnStarted:
    started, prep = await _on_ack_thread(_turn_start_db)(user, frame, provider)
    if not started.created:
        return started
    handle = manager.create(started.run_id, started.conversation_id, user.pk)
    handle.append("status", {"message": "Thinking…"})  # the ack: the user message is stored
    manager.start(handle, _turn_execute(handle, user, frame, provider, prep))
    if settings.REDIS_URL:
        await manager.listen_for(started.run_id)
    return started


@dataclass
class _Prepared:
    run_id: str
    conversation_id: int
    user_message_id: int
    conversation_created: bool = False
    assistant_message_id: int | None = None  # created by the run itself, off the acknowledgement's path
    started: float = field(default_factory=time.perf_counter)


def _turn_start_db(user: Any, frame: ChatSend, provider: Provider) -> tuple[TurnStarted, _Prepared | None]:
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
            again = selectors.message_by_client_id(user=user, client_message_id=frame.client_message_id, conversation_id=frame.conversation_id)
            if again is not None:
                return again, None
            # the running slot may be held by a run whose process died: sweep it once and try again
            if attempt == 1 and conversation is not None and run_sweep_conversation(conversation_id=conversation.pk):
                continue
            raise Busy() from None
    raise Busy()


def _turn_insert(user: Any, frame: ChatSend, provider: Provider, conversation: Conversation | None, nonce: str | None) -> tuple[TurnStarted, _Prepared | None]:
    with transaction.atomic():
        # A resend racing the original (a reconnect to another process) must find it, not store it again:
        # the unique constraint covers one conversation only, so serialise on (user, client_message_id).
        _client_message_lock(user.pk, frame.client_message_id)
        again = selectors.message_by_client_id(user=user, client_message_id=frame.client_message_id, conversation_id=frame.conversation_id)
        if again is not None:
            return again, None
        running = Run.objects.filter(conversation__owner=user, status=Run.Status.RUNNING).count()
        if running >= settings.CHAT_MAX_RUNNING_PER_USER and _sweep(None):  # dead processes' runs do not count
            running = Run.objects.filter(conversation__owner=user, status=Run.Status.RUNNING).count()
        if running >= settings.CHAT_MAX_RUNNING_PER_USER:
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
            action_metadata=_public_action_metadata(frame), client_message_id=frame.client_message_id,
        )
        run = Run.objects.create(
            conversation=conversation, user_message=user_msg, provider=provider.name,
            model=settings.CHAT_MODEL if not provider.is_offline else "offline",
            owner_process=PROCESS_ID, heartbeat_at=timezone.now(),
        )
    prep = _Prepared(run_id=str(run.pk), conversation_id=conversation.pk, user_message_id=user_msg.pk, conversation_created=created)
    return TurnStarted(run_id=str(run.pk), conversation_id=conversation.pk, created=True), prep


def _client_message_lock(user_id: int, client_message_id: str) -> None:
    """Hold a transaction-scoped lock on (user, client_message_id); SQLite's IMMEDIATE transactions already serialise."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [user_id % 2**31, client_message_id])


def _action_verify(user: Any, frame: ChatSend, conversation: Conversation | None) -> str | None:
    """For a server action: the token's nonce if it is valid for exactly this request; raises ActionRejected."""
    meta = frame.action_metadata
    if frame.interaction_type != "action_executed":
        return None
    if meta is None:
        raise ActionRejected("action_executed needs action_metadata")
    page = page_registry.get(str(frame.context.get("current_page") or ""))
    if page.server_action(meta.action_identifier) is None:
        raise ActionRejected("this action is not available on this page")
    if conversation is None:
        raise ActionRejected("action rejected: it belongs to a conversation")
    try:
        claims = action_token_verify(
            meta.token, user_id=user.pk, conversation_id=conversation.pk, action=meta.action_identifier,
            data=meta.action_data, max_age=settings.CHAT_ACTION_TOKEN_MAX_AGE,
        )
    except TokenInvalid as exc:
        raise ActionRejected(f"action rejected: {exc}") from None
    return claims.nonce


def _title(message: str) -> str:
    first = " ".join(message.split())
    return first[:77] + "…" if len(first) > 80 else first


def _public_action_metadata(frame: ChatSend) -> dict[str, Any] | None:
    if frame.action_metadata is None:
        return None
    return {"action_identifier": frame.action_metadata.action_identifier, "action_data": frame.action_metadata.action_data}


# ---- assembling the model call ------------------------------------------------------------------


@dataclass
class TurnPlan:
    """What one model turn needs, assembled from the registries and the stored history."""

    system: str
    messages: list[dict[str, Any]]
    tools: dict[str, AgentTool]
    page: PageSpec
    payload_markers: dict[str, Any]  # marker -> PayloadSpec
    diagnostics: dict[str, Any]


def turn_plan_build(*, user: Any, conversation_id: int, frame: ChatSend, upto_message_id: int | None = None) -> TurnPlan:
    """System prompt (page-aware), tools (global + page + tab + subtab - disabled) and history messages."""
    context = dict(frame.context)
    page = page_registry.get(str(context.get("current_page") or ""))
    overrides = tool_overrides()
    disabled = {name for name, o in overrides.items() if not o.enabled}
    specs = tool_registry.resolve(page.tool_names(context), disabled=disabled)
    tools = {
        s.name: s.as_agent_tool(
            description=(overrides[s.name].description or None) if s.name in overrides else None,
            requires_approval=(overrides[s.name].requires_approval or s.requires_approval) if s.name in overrides else None,
        )
        for s in specs
    }
    payload_specs = [p for p in payload_registry.all() if p.is_global] + [
        p for name in page.payload_types(context) if (p := payload_registry.get(name)) is not None
    ]
    payload_specs = list({p.type: p for p in payload_specs}.values())
    markers = {p.parse_marker: p for p in payload_specs if p.source == "llm" and p.parse_marker}
    context_text = ""
    if page.context_builder is not None:
        try:
            context_text = page.context_builder(context, user)
        except Exception:
            log.exception("context builder of page %s failed", page.name)
            context_text = "(The page context could not be loaded.)"
    prompt_input = PromptInput(
        identity=page.identity or PromptInput.identity,
        context_text=context_text,
        request_context=context,
        interaction_type=frame.interaction_type,
        action_metadata=_public_action_metadata(frame),
        manifest=selectors.payload_manifest(conversation_id=conversation_id),
        tools=[(t.name, t.description) for t in tools.values()],
        payload_instructions=[p.instructions() for p in payload_specs if p.source == "llm"],
        client_actions=[(a.action, a.description, a.parameters) for a in (*BUILTIN_CLIENT_ACTIONS, *page.client_actions)],
        server_actions=[(a.action, a.description, a.parameters) for a in page.server_actions],
        custom_instructions=page.custom_instructions,
    )
    system = system_prompt_build(prompt_input)
    if frame.conversation_history and not selectors.has_history(conversation_id=conversation_id, before_id=upto_message_id):
        stored = [StoredMessage(h.role, h.content) for h in frame.conversation_history]
        stored.append(StoredMessage("user", frame.message))
    else:
        stored = selectors.history(conversation_id=conversation_id, limit=HISTORY_MESSAGE_LIMIT, upto_id=upto_message_id)
    messages = history_build(stored, budget_tokens=settings.CHAT_HISTORY_TOKEN_BUDGET)
    diagnostics = {
        "model": settings.CHAT_MODEL,
        "max_tokens": settings.CHAT_MAX_TOKENS,
        "max_iterations": settings.CHAT_MAX_ITERATIONS,
        "temperature": settings.CHAT_TEMPERATURE,
        "tools": list(tools),
        "system_prompt": system,
        "messages": messages,
        "context": context,
        "page": page.name,
    }
    return TurnPlan(system=system, messages=messages, tools=tools, page=page, payload_markers=markers, diagnostics=diagnostics)


# ---- running a turn -----------------------------------------------------------------------------


class _TextPipe:
    """Hides payload/suggestion blocks from the live stream and coalesces text deltas into windows."""

    def __init__(self, handle: RunHandle, markers: list[str], window: float):
        self.handle = handle
        self.filter = MarkerStreamFilter(markers)
        self.window = window
        self.visible: list[str] = []
        self.pending: list[str] = []
        self.last_emit = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.first_text_at: float | None = None
        self.on_emit: Callable[[], None] | None = None

    @property
    def emitted_text(self) -> str:
        """The text already sent as text_delta events (a prefix of `text`)."""
        text = self.text
        return text[:len(text) - sum(len(p) for p in self.pending)]

    def feed(self, raw: str) -> None:
        self._queue(self.filter.feed(raw))

    def feed_verbatim(self, text: str) -> None:
        """Text the server wrote (tool markers): shown as is, never parsed for payload blocks."""
        self._queue(text)

    def _queue(self, text: str) -> None:
        if not text:
            return
        self.visible.append(text)
        self.pending.append(text)
        now = time.perf_counter()
        if now - self.last_emit >= self.window:
            self.flush()
        elif self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(self.window - (now - self.last_emit), self.flush)

    def flush(self) -> None:
        """Emit what is buffered now (called before any non-text event, and by the timer)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.pending and not self.handle.done:
            text = "".join(self.pending)
            self.pending.clear()
            self.last_emit = time.perf_counter()
            if self.first_text_at is None:
                self.first_text_at = self.last_emit
            self.handle.append("text_delta", {"text": text})
            if self.on_emit is not None:
                self.on_emit()

    def close(self) -> None:
        self._queue(self.filter.close())
        self.flush()

    @property
    def text(self) -> str:
        return "".join(self.visible)


class _Turn:
    """One run's execution state; every event of the run is emitted from here."""

    def __init__(self, handle: RunHandle, user: Any, frame: ChatSend, provider: Provider, prep: _Prepared):
        self.handle = handle
        self.user = user
        self.frame = frame
        self.provider = provider
        self.prep = prep
        self.state = LoopState()
        self.pipe: _TextPipe | None = None
        self.tool_calls: list[ToolCall] = []
        self.raw_outputs: list[dict[str, Any]] = []
        self.last_flush = time.perf_counter()
        self.flush_task: asyncio.Task[Any] | None = None
        self.flush_timer: asyncio.TimerHandle | None = None
        self.flushed_text = ""
        self.flush_window = settings.CHAT_FLUSH_INTERVAL  # doubles after each flush (see _maybe_flush_db)
        self.handlers: dict[type, Callable[[Any], Any]] = {
            AgentTextDelta: self.on_text,
            AgentToolStart: self.on_tool_start,
            AgentToolProgress: self.on_tool_progress,
            AgentToolApproval: self.on_tool_approval,
            AgentToolComplete: self.on_tool_complete,
            AgentIteration: self.on_iteration,
            AgentComplete: lambda ev: None,
        }

    def emit(self, type_: str, **fields: Any) -> None:
        if self.pipe is not None:
            self.pipe.flush()
        self.handle.append(type_, fields)

    # -- agent events --
    def on_text(self, ev: AgentTextDelta) -> None:
        assert self.pipe is not None
        (self.pipe.feed_verbatim if ev.is_tool_marker else self.pipe.feed)(ev.text)  # emitting calls _maybe_flush_db

    def on_tool_start(self, ev: AgentToolStart) -> None:
        self.emit("tool_start", tool=ev.name, input=ev.input, tool_use_id=ev.tool_use_id)

    def on_tool_progress(self, ev: AgentToolProgress) -> None:
        u = ev.update
        self.emit("tool_progress", tool=ev.name, stage=u.stage, message=u.message, progress=u.progress, data=u.data)

    async def on_tool_approval(self, ev: AgentToolApproval) -> None:
        self.handle.approvals[ev.tool_use_id] = asyncio.get_running_loop().create_future()
        await sync_to_async(PendingApproval.objects.get_or_create)(
            run_id=self.prep.run_id, tool_use_id=ev.tool_use_id, defaults={"tool_name": ev.name, "input": ev.input}
        )
        self.emit("tool_approval", tool=ev.name, input=ev.input, tool_use_id=ev.tool_use_id)

    def on_tool_complete(self, ev: AgentToolComplete) -> None:
        r = ev.result
        self.tool_calls.append(ToolCall(
            run_id=self.prep.run_id, index=ev.index, tool_use_id=ev.tool_use_id, name=ev.name, input=ev.input,
            output=r.text[:50_000], status=ToolCall.Status.ERROR if r.is_error else ToolCall.Status.OK,
            duration_ms=ev.duration_ms, error=r.text[:2000] if r.is_error else "",
        ))
        self.emit("tool_complete", tool=ev.name, index=ev.index)

    def on_iteration(self, ev: AgentIteration) -> None:
        self.raw_outputs.append({"iteration": ev.iteration, "stop_reason": ev.stop_reason, "usage": ev.usage.as_dict(), "output": ev.raw})

    async def approve(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> bool:
        fut = self.handle.approvals.get(tool_use_id)
        return bool(await fut) if fut is not None else False

    # -- persistence while streaming --
    def _maybe_flush_db(self) -> None:
        """Persist the text followers have seen; the window starts at CHAT_FLUSH_INTERVAL and doubles after each
        flush up to CHAT_FLUSH_MAX_INTERVAL, so a turn's writes grow with the log of its length, not with it."""
        if self.pipe is None or self.handle.done:
            return
        now = time.perf_counter()
        wait = self.flush_window - (now - self.last_flush)
        if wait > 0 or (self.flush_task is not None and not self.flush_task.done()):
            if self.flush_timer is None:
                self.flush_timer = asyncio.get_running_loop().call_later(max(wait, 0.02), self._flush_timer_fired)
            return
        self.last_flush = now
        text = self.pipe.emitted_text
        if text != self.flushed_text:
            self.flushed_text = text
            self.flush_window = min(self.flush_window * 2, max(settings.CHAT_FLUSH_MAX_INTERVAL, settings.CHAT_FLUSH_INTERVAL))
            self.flush_task = asyncio.get_running_loop().create_task(self._flush_db(text, self.handle.last_seq, self._provider_messages()))

    def _flush_timer_fired(self) -> None:
        self.flush_timer = None
        self._maybe_flush_db()

    async def _flush_db(self, text: str, seq: int, provider_messages: list[dict[str, Any]]) -> None:
        # other processes' followers must be able to read these events before the database holds their text
        await self.handle.wait_durable(seq, timeout=2.0)
        await sync_to_async(_assistant_flush)(message_id=self.prep.assistant_message_id, content=text, provider_messages=provider_messages)

    def _provider_messages(self) -> list[dict[str, Any]]:
        """A copy: a flush serialises it in a thread while the loop keeps appending."""
        return list(self.state.messages)

    # -- the run --
    def _prepare(self) -> TurnPlan:
        """Create the (streaming) assistant message, then assemble the model call; one thread hop."""
        self.prep.assistant_message_id = Message.objects.create(
            conversation_id=self.prep.conversation_id, role=Message.Role.ASSISTANT, status=Message.Status.STREAMING, run_id=self.prep.run_id,
        ).pk
        return turn_plan_build(user=self.user, conversation_id=self.prep.conversation_id, frame=self.frame, upto_message_id=self.prep.assistant_message_id)

    async def run(self) -> None:
        status, error = Run.Status.COMPLETED, None
        plan: TurnPlan | None = None
        result: dict[str, Any] | None = None
        try:
            plan = await sync_to_async(self._prepare)()
            self.pipe = _TextPipe(self.handle, [*plan.payload_markers, *SUGGESTION_MARKERS], settings.CHAT_COALESCE_WINDOW)
            self.pipe.on_emit = self._maybe_flush_db
            action = await self._server_action(plan)
            if action is None or action.continue_with_model:
                if action is not None:
                    self.pipe.feed(action.message + "\n\n")
                await self._model_turn(plan)
            else:
                self.pipe.feed(action.message)
            self.pipe.close()
            result = self._result(plan, action)
        except asyncio.CancelledError:
            status = Run.Status.CANCELLED
            if self.handle.interrupting:
                status, error = Run.Status.INTERRUPTED, ("interrupted", "The server restarted while answering; the partial answer was saved.")
        except ProviderError as exc:
            status, error = Run.Status.ERROR, (exc.code, exc.message)
        except ServiceError as exc:
            status, error = Run.Status.ERROR, (exc.code, exc.message)
        except Exception:
            log.exception("run %s failed", self.prep.run_id)
            status, error = Run.Status.ERROR, ("internal", "Something went wrong while answering. Please try again.")
        await self._finish(plan, status, error, result)

    async def _model_turn(self, plan: TurnPlan) -> None:
        ctx = ToolContext(
            user=self.user, conversation_id=self.prep.conversation_id, run_id=self.prep.run_id,
            context=dict(self.frame.context),
            services={"payload_lookup": lambda pid: selectors.payload_get(conversation_id=self.prep.conversation_id, payload_id=pid)},
        )
        async for ev in run_agent_loop(
            provider=self.provider, system=plan.system, messages=plan.messages, tools=plan.tools,
            model=settings.CHAT_MODEL, max_tokens=settings.CHAT_MAX_TOKENS, temperature=settings.CHAT_TEMPERATURE,
            max_iterations=settings.CHAT_MAX_ITERATIONS, ctx=ctx, approver=self.approve, state=self.state,
            sync_runner=_run_sync,
        ):
            out = self.handlers[type(ev)](ev)
            if out is not None:  # the async handlers' coroutines (cheaper than iscoroutine on every token)
                await out

    async def _server_action(self, plan: TurnPlan) -> ServerActionResult | None:
        """Run the page's handler (its token was verified and spent at turn start); None for a model turn."""
        meta = self.frame.action_metadata
        if self.frame.interaction_type != "action_executed" or meta is None:
            return None
        spec = plan.page.server_action(meta.action_identifier)
        if spec is None:  # checked at start; the page registry cannot change mid-process
            raise ActionRejected("this action is not available here")
        return await sync_to_async(spec.handler)(meta.action_data or {}, self.user, dict(self.frame.context))

    def _result(self, plan: TurnPlan, action: ServerActionResult | None) -> dict[str, Any]:
        assert self.pipe is not None
        specs = {m: p.validator() for m, p in plan.payload_markers.items()}
        parsed = parse_blocks(self.pipe.filter.extracted, specs)
        values = [_plain(v) for v in parsed.suggested_values]
        actions = [_plain(a) for a in parsed.suggested_actions]
        payloads: list[dict[str, Any]] = []
        for p in self.state.payloads:
            payloads.append(self._payload(p.get("type", "tool"), p.get("data"), "tool"))
        for marker, data in parsed.payloads:
            payloads.append(self._payload(plan.payload_markers[marker].type, data, "llm"))
        if action is not None:
            values = [*action.suggested_values, *values]
            actions = [*action.suggested_actions, *actions]
            if action.payload:
                payloads.insert(0, self._payload(action.payload.get("type", "action"), action.payload.get("data"), "action"))
        actions, dropped = self._valid_actions(plan.page, actions)
        errors = [*parsed.errors, *dropped]
        tool_payloads = [p for p in payloads if p["source"] in ("tool", "action")]
        custom = (tool_payloads[-1] if tool_payloads else (payloads[0] if payloads else None))
        return {
            "suggested_values": values,
            "suggested_actions": actions,
            "payloads": payloads,
            "custom_payload": {k: custom[k] for k in ("payload_id", "type", "data", "summary")} if custom else None,
            "parse_errors": errors,
        }

    def _payload(self, type_: str, data: Any, source: str) -> dict[str, Any]:
        spec = payload_registry.get(type_)
        summary = spec.summary(data) if spec is not None else f"{type_}"
        return {"payload_id": assign_payload_id(), "type": type_, "data": data, "summary": summary, "source": source}

    def _valid_actions(self, page: PageSpec, actions: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Keep client actions the page or tray knows and server actions with a handler; sign the latter."""
        client_ok = {a.action for a in (*BUILTIN_CLIENT_ACTIONS, *page.client_actions)}
        kept, dropped = [], []
        for item in actions:
            handler, name = item.get("handler"), item.get("action")
            if handler == "client" and name in client_ok:
                kept.append(item)
            elif handler == "server" and page.server_action(name) is not None:
                item = {**item, "token": action_token_sign(user_id=self.user.pk, conversation_id=self.prep.conversation_id, action=name, data=item.get("data"))}
                kept.append(item)
            else:
                dropped.append({"marker": "SUGGESTED_ACTIONS:", "error": f"unknown {handler} action {name!r}", "raw": str(item)[:200]})
        return kept, dropped

    async def _finish(self, plan: TurnPlan | None, status: str, error: tuple[str, str] | None, result: dict[str, Any] | None) -> None:
        """Persist the message, tool calls and diagnostics, then emit the one terminal event."""
        self.handle.finishing = True
        if self.pipe is not None:
            if status != Run.Status.COMPLETED:
                self.pipe.flush()
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        if self.flush_task is not None:
            try:
                await self.flush_task
            except Exception:
                pass
        text = self.pipe.text if self.pipe else ""
        duration = (time.perf_counter() - self.prep.started) * 1000
        ttft = ((self.pipe.first_text_at - self.prep.started) * 1000) if self.pipe and self.pipe.first_text_at else None
        diagnostics = dict(plan.diagnostics) if plan else {}
        diagnostics.update({
            "raw_llm_response": self.raw_outputs,
            "iterations": self.state.iterations,
            "usage": self.state.usage.as_dict(),
            "timings": {"duration_ms": round(duration, 2), "time_to_first_token_ms": round(ttft, 2) if ttft else None},
            "parse_errors": (result or {}).get("parse_errors", []),
            "provider": self.provider.name,
        })
        if error:
            diagnostics["error"] = {"code": error[0], "message": error[1]}
        msg_status = {
            Run.Status.COMPLETED: Message.Status.COMPLETE, Run.Status.CANCELLED: Message.Status.CANCELLED,
            Run.Status.ERROR: Message.Status.ERROR, Run.Status.INTERRUPTED: Message.Status.INTERRUPTED,
        }[status]
        r = result or {}
        payload = {
            "message": text,
            "message_html": render_markdown(text),
            "suggested_values": r.get("suggested_values", []),
            "suggested_actions": r.get("suggested_actions", []),
            "custom_payload": r.get("custom_payload"),
            "tool_history": self.state.tool_history,
            "conversation_id": self.prep.conversation_id,
            "message_id": self.prep.assistant_message_id,
            "run_id": self.prep.run_id,
            "usage": self.state.usage.as_dict(),
        }
        try:
            await sync_to_async(_turn_persist)(
                prep=self.prep, status=status, msg_status=msg_status, payload=payload, payloads=r.get("payloads", []),
                provider_messages=self._provider_messages(), tool_calls=self.tool_calls, diagnostics=diagnostics,
                usage=self.state.usage.as_dict(), ttft=ttft, duration=duration, error=error,
                last_seq=self.handle.last_seq + 1,
            )
        except Exception:
            log.exception("persisting run %s failed", self.prep.run_id)
        if status == Run.Status.COMPLETED:
            if getattr(self.user, "is_staff", False):
                payload["diagnostics"] = diagnostics
            try:
                self.emit("complete", payload=payload)
            except (TypeError, ValueError):  # never leave a run without its terminal event
                log.exception("run %s: complete payload not serialisable", self.prep.run_id)
                self.emit("error", code="internal", message="Something went wrong while answering. Please try again.")
        elif status == Run.Status.CANCELLED:
            self.emit("cancelled")
        else:
            assert error is not None
            self.emit("error", code=error[0], message=error[1])


async def _run_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Blocking tool code runs in Django's sync thread, so it uses the ORM like any view would."""
    return await sync_to_async(fn)(*args)


def _plain(value: Any) -> dict[str, Any]:
    return value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else dict(value)


async def _turn_execute(handle: RunHandle, user: Any, frame: ChatSend, provider: Provider, prep: _Prepared | None) -> None:
    assert prep is not None
    turn = _Turn(handle, user, frame, provider, prep)
    try:
        await turn.run()
    except asyncio.CancelledError:
        # cancelled while finishing: the terminal event must still go out
        if not handle.done:
            await turn._finish(None, Run.Status.CANCELLED, None, None)


def _assistant_flush(*, message_id: int, content: str, provider_messages: list[dict[str, Any]]) -> None:
    Message.objects.filter(pk=message_id, status=Message.Status.STREAMING).update(
        content=content, provider_messages=provider_messages, updated_at=timezone.now()
    )


def _turn_persist(
    *, prep: _Prepared, status: str, msg_status: str, payload: dict[str, Any], payloads: list[dict[str, Any]],
    provider_messages: list[dict[str, Any]], tool_calls: list[ToolCall], diagnostics: dict[str, Any],
    usage: dict[str, int], ttft: float | None, duration: float, error: tuple[str, str] | None, last_seq: int,
) -> None:
    with transaction.atomic():
        if tool_calls:  # they ran, whatever happens to the run's verdict
            ToolCall.objects.bulk_create(tool_calls, ignore_conflicts=True)
        if prep.assistant_message_id is None:  # the run ended before it got to create its message
            prep.assistant_message_id = Message.objects.create(
                conversation_id=prep.conversation_id, role=Message.Role.ASSISTANT, status=msg_status, run_id=prep.run_id,
            ).pk
            payload["message_id"] = prep.assistant_message_id
        # only a run still running is ours to finish: one the sweep declared interrupted keeps that verdict
        finished = Run.objects.filter(pk=prep.run_id, status=Run.Status.RUNNING).update(
            status=status, assistant_message_id=prep.assistant_message_id, input_tokens=usage["input_tokens"],
            output_tokens=usage["output_tokens"], time_to_first_token_ms=ttft, duration_ms=duration,
            diagnostics=diagnostics, finished_at=timezone.now(), last_seq=last_seq,
            error_code=error[0] if error else "", error_message=error[1] if error else "",
        )
        if not finished:
            return
        Message.objects.filter(pk=prep.assistant_message_id).update(
            content=payload["message"], status=msg_status, suggested_values=payload["suggested_values"],
            suggested_actions=payload["suggested_actions"], custom_payload=payload["custom_payload"],
            payloads=payloads, tool_history=payload["tool_history"], provider_messages=provider_messages,
            updated_at=timezone.now(),
        )
        if not prep.conversation_created:  # a new conversation's row is already this fresh
            Conversation.objects.filter(pk=prep.conversation_id).update(updated_at=timezone.now())


# ---- cancel, approve, heartbeat, sweep ----------------------------------------------------------


async def run_cancel(*, user: Any, run_id: str) -> None:
    """Cancel the user's run wherever it runs; someone else's run is `not_found`."""
    run = await selectors.run_for_user(user=user, run_id=run_id)
    if run.status == Run.Status.RUNNING:
        await manager.cancel(str(run.pk))


async def approval_answer(*, user: Any, run_id: str, tool_use_id: str, approved: bool) -> None:
    """Record the user's answer exactly once and hand it to the run."""
    run = await selectors.run_for_user(user=user, run_id=run_id)
    updated = await PendingApproval.objects.filter(run=run, tool_use_id=tool_use_id, approved__isnull=True).aupdate(
        approved=approved, answered_at=timezone.now()
    )
    if updated != 1:
        raise NotFound("no pending approval with that id")
    await manager.deliver_approval(str(run.pk), tool_use_id, approved)


async def run_heartbeat(*, run_ids: list[str], process_id: str) -> None:
    """Mark this process's running runs alive (one UPDATE for all of them)."""
    if run_ids:
        await Run.objects.filter(pk__in=run_ids, status=Run.Status.RUNNING).aupdate(heartbeat_at=timezone.now(), owner_process=process_id)


async def run_sweep_stale() -> int:
    """Runs whose owner stopped beating are `interrupted`; their partial messages keep what was flushed."""
    return await sync_to_async(_sweep)(None)


def run_sweep_conversation(*, conversation_id: int) -> int:
    return _sweep(conversation_id)


def _sweep(conversation_id: int | None) -> int:
    cutoff = timezone.now() - timedelta(seconds=settings.CHAT_STALE_AFTER)
    stale = Run.objects.filter(status=Run.Status.RUNNING, heartbeat_at__lt=cutoff)
    if conversation_id is not None:
        stale = stale.filter(conversation_id=conversation_id)
    ids = list(stale.values_list("pk", flat=True)[:500])
    if not ids:
        return 0
    with transaction.atomic():
        n = Run.objects.filter(pk__in=ids, status=Run.Status.RUNNING).update(
            status=Run.Status.INTERRUPTED, finished_at=timezone.now(), error_code="interrupted",
            error_message="The server process running this turn stopped.",
        )
        Message.objects.filter(run_id__in=ids, status=Message.Status.STREAMING).update(status=Message.Status.INTERRUPTED)
    return n


def runs_interrupt_all_running() -> int:
    """Startup sweep for a single-process deployment: nothing can still be running."""
    with transaction.atomic():
        ids = list(Run.objects.filter(status=Run.Status.RUNNING).values_list("pk", flat=True))
        Run.objects.filter(pk__in=ids).update(status=Run.Status.INTERRUPTED, finished_at=timezone.now(), error_code="interrupted")
        Message.objects.filter(run_id__in=ids, status=Message.Status.STREAMING).update(status=Message.Status.INTERRUPTED)
    return len(ids)


# ---- conversations ------------------------------------------------------------------------------


def conversation_create(*, user: Any, title: str = "", page: str = "") -> Conversation:
    return Conversation.objects.create(owner=user, title=title[:200], page=page[:100])


def conversation_rename(*, user: Any, conversation_id: int, title: str) -> Conversation:
    conv = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conv is None:
        raise NotFound("conversation not found")
    conv.title = title[:200]
    conv.save(update_fields=["title", "updated_at"])
    return conv


def conversation_delete(*, user: Any, conversation_id: int) -> None:
    deleted, _ = Conversation.objects.filter(pk=conversation_id, owner=user).delete()
    if not deleted:
        raise NotFound("conversation not found")


async def run_replay_or_resync(*, user: Any, run_id: str, after_seq: int) -> str:
    """When a run's log is gone: its stored terminal event for a fresh follower, else a `resync` error."""
    import json

    run = await selectors.run_for_user(user=user, run_id=run_id)
    if run.status != Run.Status.RUNNING and after_seq == 0:
        run = await Run.objects.select_related("assistant_message").aget(pk=run.pk)
        event = await sync_to_async(selectors.run_complete_payload)(run=run, user=user)
        if event is not None:
            return json.dumps(event, ensure_ascii=False)
    return json.dumps({"type": "error", "code": "resync", "run_id": run_id,
                       "message": "These events are no longer available; reload the conversation."})
