"""A turn's work, as the task its run is: every event of the run is emitted from here, the terminal one last."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async

from chat import selectors
from chat.agent.loop import run_agent_loop
from chat.agent.types import (
    AgentComplete,
    AgentEvent,
    AgentIteration,
    AgentTextDelta,
    AgentToolApproval,
    AgentToolComplete,
    AgentToolProgress,
    AgentToolStart,
    LoopState,
    ToolContext,
)
from chat.conf import chat_settings
from chat.errors import ActionRejected, ErrorCode, ServiceError, error_code
from chat.events import (
    CancelledEvent,
    ChatSend,
    CompleteEvent,
    ErrorEvent,
    ToolApprovalEvent,
    ToolCompleteEvent,
    ToolProgressEvent,
    ToolStartEvent,
    complete_payload_build,
)
from chat.models import Run, ToolCall
from chat.providers.base import Provider, ProviderError
from chat.runs import RunHandle
from chat.turns import persistence
from chat.turns.answer import AnswerParts, answer_parts_build
from chat.turns.persistence import TurnOutcome, TurnRecord
from chat.turns.pipe import TextPipe
from chat.turns.planning import TurnPlan, turn_plan_build
from pages.registry import ServerActionResult
from payloads.parsing import SUGGESTED_ACTIONS_MARKER, SUGGESTED_VALUES_MARKER

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)
INTERRUPTED: tuple[ErrorCode, str] = ("interrupted", "The server restarted while answering; the partial answer was saved.")
INTERNAL: tuple[ErrorCode, str] = ("internal", "Something went wrong while answering. Please try again.")


class Turn:
    """One run's execution state: the model (or a server action), the text pipe, flushes, the final save."""

    def __init__(self, handle: RunHandle, user: User, frame: ChatSend, provider: Provider, record: TurnRecord) -> None:
        self.handle = handle
        self.user = user
        self.frame = frame
        self.provider = provider
        self.record = record
        self.state = LoopState()
        self.pipe: TextPipe | None = None
        self.tool_calls: list[ToolCall] = []
        self.raw_outputs: list[dict[str, Any]] = []
        self.last_flush = time.perf_counter()
        self.flush_task: asyncio.Task[None] | None = None
        self.flush_timer: asyncio.TimerHandle | None = None
        self.flushed_text = ""
        self.flush_window = chat_settings.CHAT_FLUSH_INTERVAL  # doubles after each flush (see _maybe_flush)
        # agent event -> handler; the async ones return their coroutine
        self.handlers: dict[type, Callable[[Any], Any]] = {
            AgentTextDelta: self.on_text,
            AgentToolStart: self.on_tool_start,
            AgentToolProgress: self.on_tool_progress,
            AgentToolApproval: self.on_tool_approval,
            AgentToolComplete: self.on_tool_complete,
            AgentIteration: self.on_iteration,
            AgentComplete: lambda ev: None,
        }

    # -- agent events --
    def _before_event(self) -> None:
        if self.pipe is not None:  # text before the event goes out first
            self.pipe.flush()

    def on_text(self, ev: AgentTextDelta) -> None:
        assert self.pipe is not None
        (self.pipe.feed_verbatim if ev.is_tool_marker else self.pipe.feed)(ev.text)  # emitting calls _maybe_flush

    def on_tool_start(self, ev: AgentToolStart) -> None:
        self._before_event()
        self.handle.append(ToolStartEvent.wire, tool=ev.name, input=ev.input, tool_use_id=ev.tool_use_id)

    def on_tool_progress(self, ev: AgentToolProgress) -> None:
        u = ev.update
        self._before_event()
        self.handle.append(ToolProgressEvent.wire, tool=ev.name, stage=u.stage, message=u.message, progress=u.progress, data=u.data)

    async def on_tool_approval(self, ev: AgentToolApproval) -> None:
        self.handle.approvals[ev.tool_use_id] = asyncio.get_running_loop().create_future()
        await sync_to_async(persistence.approval_record)(
            run_id=self.record.run_id, tool_use_id=ev.tool_use_id, tool_name=ev.name, tool_input=ev.input)
        self._before_event()
        self.handle.append(ToolApprovalEvent.wire, tool=ev.name, input=ev.input, tool_use_id=ev.tool_use_id)

    def on_tool_complete(self, ev: AgentToolComplete) -> None:
        r = ev.result
        self.tool_calls.append(ToolCall(
            run_id=self.record.run_id, index=ev.index, tool_use_id=ev.tool_use_id, name=ev.name, input=ev.input,
            output=r.text[:50_000], status=ToolCall.Status.ERROR if r.is_error else ToolCall.Status.OK,
            duration_ms=ev.duration_ms, error=r.text[:2000] if r.is_error else "",
        ))
        self._before_event()
        self.handle.append(ToolCompleteEvent.wire, tool=ev.name, index=ev.index)

    def on_iteration(self, ev: AgentIteration) -> None:
        self.raw_outputs.append({"iteration": ev.iteration, "stop_reason": ev.stop_reason, "usage": ev.usage.as_dict(), "output": ev.raw})

    async def approve(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> bool:
        fut = self.handle.approvals.get(tool_use_id)
        return bool(await fut) if fut is not None else False

    # -- saving the text while it streams --
    def _maybe_flush(self) -> None:
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
            self.flush_window = min(self.flush_window * 2, max(chat_settings.CHAT_FLUSH_MAX_INTERVAL, chat_settings.CHAT_FLUSH_INTERVAL))
            self.flush_task = asyncio.get_running_loop().create_task(self._flush(text, self.handle.last_seq, self._provider_messages()))

    def _flush_timer_fired(self) -> None:
        self.flush_timer = None
        self._maybe_flush()

    async def _flush(self, text: str, seq: int, provider_messages: list[dict[str, Any]]) -> None:
        message_id = self.record.assistant_message_id
        if message_id is None:  # nothing to flush into yet (the final save creates the message)
            return
        # other processes' followers must be able to read these events before the database holds their text
        await self.handle.wait_durable(seq, timeout=2.0)
        await sync_to_async(persistence.assistant_message_flush)(message_id=message_id, content=text, provider_messages=provider_messages)

    def _provider_messages(self) -> list[dict[str, Any]]:
        """A copy: a flush serialises it in a thread while the loop keeps appending."""
        return list(self.state.messages)

    # -- the run --
    def _prepare(self) -> TurnPlan:
        """Create the (streaming) assistant message, then assemble the model call; one thread hop."""
        message_id = persistence.assistant_message_create(record=self.record)
        return turn_plan_build(user=self.user, conversation_id=self.record.conversation_id, frame=self.frame, upto_message_id=message_id)

    async def run(self) -> None:
        status: str = Run.Status.COMPLETED
        error: tuple[ErrorCode, str] | None = None
        plan: TurnPlan | None = None
        parts: AnswerParts | None = None
        try:
            plan = await sync_to_async(self._prepare)()
            self.pipe = TextPipe(self.handle, [*plan.payload_markers, SUGGESTED_VALUES_MARKER, SUGGESTED_ACTIONS_MARKER],
                                 chat_settings.CHAT_COALESCE_WINDOW)
            self.pipe.on_emit = self._maybe_flush
            action = await self._server_action(plan)
            if action is None or action.continue_with_model:
                if action is not None:
                    self.pipe.feed(action.message + "\n\n")
                await self._model_turn(plan)
            else:
                self.pipe.feed(action.message)
            self.pipe.close()
            parts = answer_parts_build(plan=plan, extracted=self.pipe.filter.extracted, tool_payloads=self.state.payloads,
                                       action=action, user_id=self.user.pk, conversation_id=self.record.conversation_id)
        except asyncio.CancelledError:
            status = Run.Status.CANCELLED
            if self.handle.interrupting:
                status, error = Run.Status.INTERRUPTED, INTERRUPTED
        except ProviderError as exc:
            status, error = Run.Status.ERROR, (error_code(exc.code, "provider_error"), exc.message)
        except ServiceError as exc:
            status, error = Run.Status.ERROR, (exc.code, exc.message)
        except Exception:
            log.exception("run %s failed", self.record.run_id)
            status, error = Run.Status.ERROR, INTERNAL
        await self.finish(plan, status, error, parts)

    async def _model_turn(self, plan: TurnPlan) -> None:
        conversation_id = self.record.conversation_id
        ctx = ToolContext(
            user=self.user, conversation_id=conversation_id, run_id=self.record.run_id, context=dict(self.frame.context),
            services={"payload_lookup": lambda pid: selectors.payload_get(conversation_id=conversation_id, payload_id=pid)},
        )
        events = run_agent_loop(
            provider=self.provider, system=plan.system, messages=plan.messages, tools=plan.tools,
            model=chat_settings.CHAT_MODEL, max_tokens=chat_settings.CHAT_MAX_TOKENS, temperature=chat_settings.CHAT_TEMPERATURE,
            max_iterations=chat_settings.CHAT_MAX_ITERATIONS, ctx=ctx, approver=self.approve, state=self.state,
            sync_runner=_run_sync,
        )
        ev: AgentEvent
        async for ev in events:
            out = self.handlers[type(ev)](ev)
            if out is not None:  # the async handlers' coroutines (cheaper than iscoroutine on every token)
                await out

    async def _server_action(self, plan: TurnPlan) -> ServerActionResult | None:
        """Run the page's handler (its token was verified and spent at admission); None for a model turn."""
        meta = self.frame.action_metadata
        if self.frame.interaction_type != "action_executed" or meta is None:
            return None
        spec = plan.page.server_action(meta.action_identifier)
        if spec is None:  # checked at admission; the page registry cannot change mid-process
            raise ActionRejected("this action is not available here")
        result: ServerActionResult = await sync_to_async(spec.handler)(meta.action_data or {}, self.user, dict(self.frame.context))
        return result

    async def finish(self, plan: TurnPlan | None, status: str, error: tuple[ErrorCode, str] | None, parts: AnswerParts | None) -> None:
        """Persist the message, tool calls and diagnostics, then emit the one terminal event."""
        self.handle.finishing = True
        if self.pipe is not None and status != Run.Status.COMPLETED:
            self.pipe.flush()
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        if self.flush_task is not None:
            with contextlib.suppress(Exception):  # the final save below writes the same text again
                await self.flush_task
        parts = parts or AnswerParts()
        text = self.pipe.text if self.pipe else ""
        duration = (time.perf_counter() - self.record.started) * 1000
        first = self.pipe.first_text_at if self.pipe else None
        ttft = (first - self.record.started) * 1000 if first else None
        usage = self.state.usage.as_dict()
        diagnostics = dict(plan.diagnostics) if plan else {}
        diagnostics.update({
            "raw_llm_response": self.raw_outputs, "iterations": self.state.iterations, "usage": usage,
            "timings": {"duration_ms": round(duration, 2), "time_to_first_token_ms": round(ttft, 2) if ttft else None},
            "parse_errors": parts.parse_errors, "provider": self.provider.name,
        })
        if error:
            diagnostics["error"] = {"code": error[0], "message": error[1]}
        try:
            await sync_to_async(persistence.turn_persist)(record=self.record, outcome=TurnOutcome(
                status=status, text=text, suggested_values=parts.suggested_values, suggested_actions=parts.suggested_actions,
                custom_payload=parts.custom_payload, payloads=parts.payloads, tool_history=self.state.tool_history,
                provider_messages=self._provider_messages(), tool_calls=self.tool_calls, diagnostics=diagnostics,
                usage=usage, ttft=ttft, duration=duration, error=error, last_seq=self.handle.last_seq + 1,
            ))
        except Exception:
            log.exception("persisting run %s failed", self.record.run_id)
        if status == Run.Status.COMPLETED:
            try:
                payload = complete_payload_build(
                    message=text, suggested_values=parts.suggested_values, suggested_actions=parts.suggested_actions,
                    custom_payload=parts.custom_payload, tool_history=self.state.tool_history,
                    conversation_id=self.record.conversation_id, message_id=self.record.assistant_message_id,
                    run_id=self.record.run_id, usage=usage, diagnostics=diagnostics if getattr(self.user, "is_staff", False) else None,
                )
                self.handle.end(CompleteEvent.wire, payload=payload)
            except (TypeError, ValueError):  # not valid or not serialisable: never leave a run without its terminal event
                log.exception("run %s: complete payload not valid", self.record.run_id)
                self.handle.end(ErrorEvent.wire, code=INTERNAL[0], message=INTERNAL[1])
        elif status == Run.Status.CANCELLED:
            self.handle.end(CancelledEvent.wire)
        else:
            assert error is not None
            self.handle.end(ErrorEvent.wire, code=error[0], message=error[1])


async def _run_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Blocking tool code runs in Django's sync thread, so it uses the ORM like any view would."""
    return await sync_to_async(fn)(*args)


async def turn_execute(handle: RunHandle, user: User, frame: ChatSend, provider: Provider, record: TurnRecord) -> None:
    """The run's task: acknowledge, do the turn, end it (a cancel while finishing still ends it)."""
    turn = Turn(handle, user, frame, provider, record)
    try:
        await turn.run()
    except asyncio.CancelledError:
        if not handle.done:
            await turn.finish(None, Run.Status.CANCELLED, None, None)

