"""A turn's work, as the task its run is: every event of the run is emitted from here, the terminal one last."""
from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import connections
from django.utils import translation

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
from chat.events import (
    SUGGESTED_ACTIONS_MARKER,
    SUGGESTED_VALUES_MARKER,
    CancelledEvent,
    ChatSend,
    CompleteEvent,
    ErrorEvent,
    changes_clean,
    complete_payload_build,
)
from chat.events.errors import ActionRejected, ErrorCode, ServiceError, error_code
from chat.infra import logs
from chat.infra.db_threads import RUNS
from chat.models import Message, Run, ToolCall, action_stat_count
from chat.prompt.languages import language_normalize
from chat.providers.base import Provider, ProviderError
from chat.quotas.budgets import budgets
from chat.quotas.costs import cost_of
from chat.runs import RunHandle
from chat.runs.malloc import trimmer
from chat.turns import persistence, titles
from chat.turns.actions import action_run, close_button
from chat.turns.answer import AnswerParts, answer_parts_build
from chat.turns.observer import TurnObserver, model_recorded
from chat.turns.persistence import TurnOutcome, TurnRecord
from chat.turns.pipe import TextPipe
from chat.turns.planning import TurnPlan, turn_plan_build
from chat.turns.pool import run_sync
from chat.turns.saving import StreamSaver
from chat.turns.tab_tools import TurnTabTools
from chat.turns.tool_calls import TurnToolCalls
from pages.registry import ServerActionResult

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)
INTERRUPTED: tuple[ErrorCode, str] = ("interrupted", "The server restarted while answering; the partial answer was saved.")
INTERNAL: tuple[ErrorCode, str] = ("internal", "Something went wrong while answering. Please try again.")
# Once an answer this long (characters) is saved, the runs thread's database connection is closed: a connection keeps
# buffers sized to the largest rows it wrote (SQLite's page cache and its cached statements' last bound values,
# libpq's buffers): megabytes for the process's life after one long answer. The next job connects again (one connect).
LONG_ANSWER = 256 * 1024


class Turn(TurnToolCalls, TurnTabTools):
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
        self.saver = StreamSaver(handle, record.assistant_message_id, self.state)  # the text, saved while it streams
        self.action_result: dict[str, Any] | None = None  # how the clicked server action ended (complete.action_result)
        self.sources: list[dict[str, Any]] = []  # what the turn's searches found, numbered (complete.payload.sources)
        self.stop_reason = ""  # why the answer is unfinished (Message.StopReason), blank when it ended as meant
        self.model = model_recorded(provider)  # what its metrics, price and log line name
        self.observer = TurnObserver(provider.name, self.model)  # its metrics and spans
        self.tool_titles: dict[str, str] = {}  # the plan's: tool name -> its title in the turn's language
        self.tool_context: ToolContext | None = None  # what the tools (and their approval sentences) see of the turn
        self.sent_state: dict[str, Any] = copy.deepcopy(frame.state or {})  # the page's shared state as the page last heard it
        # agent event -> handler; the async ones return their coroutine
        self.handlers: dict[type, Callable[[Any], Any]] = {
            AgentTextDelta: self.on_text,
            AgentToolStart: self.on_tool_start,
            AgentToolProgress: self.on_tool_progress,
            AgentToolApproval: self.on_tool_approval,
            AgentToolComplete: self.on_tool_complete,
            AgentIteration: self.on_iteration,
            AgentComplete: self.on_complete,
        }

    def close(self) -> None:
        """Break the turn's reference cycles (its handlers and the pipe's callback are its own bound methods): it and
        its text are then freed as its task ends, not at some later full garbage collection (an idle server may run
        none for hours, keeping the last answers in memory)."""
        self.handlers.clear()
        if self.pipe is not None:
            self.pipe.on_emit = None

    # -- agent events --
    def before_event(self) -> None:
        """Send the text held back so far before an event that follows it."""
        if self.pipe is not None:  # text before the event goes out first
            self.pipe.flush()

    def on_text(self, ev: AgentTextDelta) -> None:
        assert self.pipe is not None
        (self.pipe.feed_verbatim if ev.is_tool_marker else self.pipe.feed)(ev.text)  # emitting calls saver.maybe_flush

    def on_iteration(self, ev: AgentIteration) -> None:
        """A model call ended: its latency, tokens and span; its raw output for the diagnostics."""
        self.observer.model_call_ended(stop_reason=ev.stop_reason, usage=ev.usage, output=self.state.text)
        self.raw_outputs.append({"iteration": ev.iteration, "stop_reason": ev.stop_reason, "usage": ev.usage.as_dict(), "output": ev.raw})

    def on_complete(self, ev: AgentComplete) -> None:
        """The loop ended: an answer cut at the token or tool-call limit is marked so the reader can ask it to go on."""
        self.stop_reason = ev.stop_reason if ev.stop_reason in Message.StopReason.values else ""

    # -- operations --
    def _record_outcome(self, status: str, error: tuple[ErrorCode, str] | None, usage: dict[str, Any], cost: float | None,
                        ttft: float | None, duration: float) -> None:
        """Once per turn: its metrics and the end of its span (the observer), its log line (ids, codes, counts,
        timings; never text)."""
        terminal = _terminal_of(status)
        self.observer.turn_ended(terminal=terminal, code=error[0] if error else "", usage=usage, cost=cost, ttft_ms=ttft,
                                 output=self.pipe.text if self.pipe else "")
        log.info("run finished", extra={
            "terminal": terminal, "status": status, "provider": self.provider.name, "model": self.model,
            "input_tokens": usage.get("input_tokens", 0), "output_tokens": usage.get("output_tokens", 0),
            "tool_calls": len(self.tool_calls), "duration_ms": round(duration, 1), "ttft_ms": round(ttft, 1) if ttft else None,
        })

    # -- the run --
    def _prepare(self) -> TurnPlan:
        """Assemble the model call (its history reads up to the run's assistant message); one thread hop."""
        return turn_plan_build(user=self.user, conversation_id=self.record.conversation_id, frame=self.frame,
                               upto_message_id=self.record.assistant_message_id,
                               client_tools=self.record.client_tools, new_conversation=self.record.conversation_created,
                               user_message_id=self.record.user_message_id, provider=self.provider)

    async def run(self) -> None:
        logs.turn_context_set(run_id=self.record.run_id, conversation_id=self.record.conversation_id, user_id=self.user.pk)
        self.observer.turn_started(page=str(self.frame.context.get("current_page") or ""), conversation_id=self.record.conversation_id,
                                   run_id=self.record.run_id, message=self.frame.message)
        status: str = Run.Status.COMPLETED
        error: tuple[ErrorCode, str] | None = None
        plan: TurnPlan | None = None
        parts: AnswerParts | None = None
        try:
            plan = await RUNS.run(self._prepare)()
            self.pipe = TextPipe(self.handle, [*plan.payload_markers, SUGGESTED_VALUES_MARKER, SUGGESTED_ACTIONS_MARKER],
                                 chat_settings.CHAT_COALESCE_WINDOW)
            self.saver.pipe = self.pipe
            self.pipe.on_emit = self.saver.maybe_flush
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
            self.observer.model_call_failed(error[0])
        except ServiceError as exc:
            status, error = Run.Status.ERROR, (exc.code, exc.message)
        except Exception:
            log.exception("run %s failed", self.record.run_id)
            status, error = Run.Status.ERROR, INTERNAL
        await self.finish_uncancellable(plan, status, error, parts)

    async def finish_uncancellable(self, *args: Any) -> None:
        """`finish` to its end even when the task is cancelled again meanwhile: a run never ends without its terminal
        event. (A library's cancel scope, such as anyio's in the MCP client, re-delivers a cancel at every await.)"""
        finishing = asyncio.ensure_future(self.finish(*args))
        while not finishing.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(finishing)
        finishing.result()

    async def _model_turn(self, plan: TurnPlan) -> None:
        self.observer.model_call_started()
        conversation_id = self.record.conversation_id
        self.tool_titles = plan.tool_titles
        self.tool_context = ctx = ToolContext(
            user=self.user, conversation_id=conversation_id, run_id=self.record.run_id, context=dict(self.frame.context),
            services={"payload_lookup": lambda pid: selectors.payload_get(conversation_id=conversation_id, payload_id=pid)},
            state=copy.deepcopy(self.sent_state),  # a tool may edit it anywhere, nested values included
        )
        events = run_agent_loop(
            provider=self.provider, system=plan.system, prompt=plan.prompt, messages=plan.messages, tools=self.tab_tools_bind(plan.tools),
            model=chat_settings.CHAT_MODEL, max_tokens=chat_settings.CHAT_MAX_TOKENS, temperature=chat_settings.CHAT_TEMPERATURE,
            max_iterations=chat_settings.CHAT_MAX_ITERATIONS, ctx=ctx, approver=self.approve, state=self.state,
            sync_runner=run_sync, before_tool=self.before_tool,
        )
        ev: AgentEvent
        async for ev in events:
            out = self.handlers[type(ev)](ev)
            if out is not None:  # the async handlers' coroutines (cheaper than iscoroutine on every token)
                await out

    async def _server_action(self, plan: TurnPlan) -> ServerActionResult | None:
        """Run the page's handler (its token was verified and spent at admission); None for a model turn.

        A click that may not run (unknown action, expired, altered or used button) is answered with its reason
        and a Close button; a handler that fails is answered the same way, its writes rolled back."""
        meta = self.frame.action_metadata
        if self.frame.interaction_type != "action_executed" or meta is None:
            return None
        name = meta.action_identifier
        if self.record.action_refusal is not None:
            self.action_result = {"action": name, "status": "rejected", "refresh": False}
            return ServerActionResult(message=self.record.action_refusal, suggested_actions=[close_button()])
        spec = plan.page.server_action(name)
        if spec is None:  # checked at admission; the page registry cannot change mid-process
            raise ActionRejected("this action is not available here")
        result = await run_sync(action_run, spec, meta.action_data or {}, self.user, dict(self.frame.context))
        self.action_result = {"action": name, "status": "succeeded" if result.ok else "failed", "refresh": result.refresh and result.ok}
        if result.ok and (changes := changes_clean(result.changes)):
            self.action_result["changes"] = changes  # the page is told what changed (a failed action's writes are rolled back)
        await RUNS.run(action_stat_count)(page=plan.page.name, action=name, fields=("succeeded" if result.ok else "failed",))
        return result

    async def finish(self, plan: TurnPlan | None, status: str, error: tuple[ErrorCode, str] | None, parts: AnswerParts | None) -> None:
        """Persist the message, tool calls and diagnostics, then emit the one terminal event."""
        self.handle.finishing = True
        if self.pipe is not None and status != Run.Status.COMPLETED:
            self.pipe.flush()
        await self.saver.settle()
        parts = parts or AnswerParts()
        self._answered_calls_record()
        for call in self.state.tool_history:  # each card is headed with its tool's title, live and when read back
            call.setdefault("title", self.tool_title(str(call.get("tool_name", ""))))
        text = self.pipe.text if self.pipe else ""
        duration = (time.perf_counter() - self.record.started) * 1000
        first = self.pipe.first_text_at if self.pipe else None
        ttft = (first - self.record.started) * 1000 if first else None
        usage = self.state.usage.as_dict()
        cost = cost_of(self.model, usage)  # the one price table (CHAT_PRICES); None when the model has no price
        diagnostics = dict(plan.diagnostics) if plan else {}
        diagnostics.update({
            "raw_llm_response": self.raw_outputs, "iterations": self.state.iterations, "usage": usage,
            "timings": {"duration_ms": round(duration, 2), "time_to_first_token_ms": round(ttft, 2) if ttft else None},
            "parse_errors": parts.parse_errors, "provider": self.provider.name,
            "model": self.provider.model_name(chat_settings.CHAT_MODEL), "provider_label": self.provider.label,
            "cost": {"model": self.model, "usd": cost, "per_iteration_usd": [cost_of(self.model, r["usage"]) for r in self.raw_outputs]},
        })
        if error:
            diagnostics["error"] = {"code": error[0], "message": error[1]}
            logs.error_code_var.set(error[0])
        if self.action_result is not None:
            diagnostics["action_result"] = self.action_result  # read back when the terminal event is rebuilt
        if self.sources:
            diagnostics["sources"] = self.sources  # read back when the terminal event is rebuilt
        self._record_outcome(status, error, usage, cost, ttft, duration)
        try:
            await RUNS.run(persistence.turn_persist)(record=self.record, outcome=TurnOutcome(
                status=status, text=text, suggested_values=parts.suggested_values, suggested_actions=parts.suggested_actions,
                custom_payload=parts.custom_payload, payloads=parts.payloads, tool_history=self.state.tool_history,
                provider_messages=self.saver.provider_messages(), tool_calls=self.tool_calls, diagnostics=diagnostics,
                usage=usage, cost=cost, ttft=ttft, duration=duration, error=error, last_seq=self.handle.last_seq + 1,
                page=plan.page.name if plan else "",
                offered_actions=[a["action"] for a in parts.suggested_actions if a.get("handler") == "server"],
                stop_reason=self.stop_reason if status == Run.Status.COMPLETED else "",
            ))
        except Exception:
            log.exception("persisting run %s failed", self.record.run_id)
        await budgets.spend(self.user.pk, usage, cost)
        if status == Run.Status.COMPLETED:
            try:
                payload = complete_payload_build(
                    message=text, suggested_values=parts.suggested_values, suggested_actions=parts.suggested_actions,
                    custom_payload=parts.custom_payload, tool_history=self.state.tool_history,
                    conversation_id=self.record.conversation_id, message_id=self.record.assistant_message_id,
                    run_id=self.record.run_id, usage=usage, diagnostics=diagnostics if getattr(self.user, "is_staff", False) else None,
                    action_result=self.action_result, stop_reason=self.stop_reason or None, sources=self.sources,
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
        if status == Run.Status.COMPLETED and (self.record.conversation_created or self.record.retitle):
            await titles.turn_title_set(self.provider, question=self.frame.message, answer=text, language=self.frame.language,
                                        run_id=self.record.run_id, conversation_id=self.record.conversation_id, user_id=self.user.pk)
        if len(text) >= LONG_ANSWER:
            await RUNS.run(_connections_close)()
            trimmer.released(len(text))  # their buffers were freed just now, after the run's own trim was scheduled

    def _answered_calls_record(self) -> None:
        """The client's answers this run continued from, stored like any tool call (after the run's own, whose
        indices are the text's [[tool:N]] markers)."""
        for call in self.record.answered_calls:
            self.tool_calls.append(ToolCall(
                run_id=self.record.run_id, index=len(self.state.tool_history), tool_use_id=call.tool_use_id, name=call.name,
                input=call.input, output=call.output[:50_000], status=ToolCall.Status.OK, duration_ms=0,
            ))
            self.state.tool_history.append({"tool_name": call.name, "input": call.input, "output": call.output})
        self.record.answered_calls = []


def _connections_close() -> None:
    """Close this thread's database connections (see LONG_ANSWER); one that fails to close is dropped all the same."""
    try:
        connections.close_all()
    except Exception:  # the answer is saved and sent: nothing of the turn depends on this
        log.warning("closing the database connection after a long answer failed", exc_info=True)


def _terminal_of(status: str) -> str:
    terminals: dict[str, str] = {Run.Status.COMPLETED: "complete", Run.Status.CANCELLED: "cancelled"}
    return terminals.get(status, "error")


def turn_language(frame: ChatSend) -> str | None:
    """The language the turn speaks to the user in: the frame's, if the site offers it (LANGUAGES), else None."""
    code = language_normalize(frame.language)
    if code is None:
        return None
    try:
        return translation.get_supported_language_variant(code)
    except LookupError:
        return None


async def turn_execute(handle: RunHandle, user: User, frame: ChatSend, provider: Provider, record: TurnRecord) -> None:
    """The run's task: acknowledge, do the turn, end it (a cancel while finishing still ends it)."""
    turn = Turn(handle, user, frame, provider, record)
    language = turn_language(frame)
    try:
        # the user's language for the whole turn (server actions and tools reply in it; contextvars reach their threads)
        with translation.override(language) if language else contextlib.nullcontext():
            await turn.run()
    except asyncio.CancelledError:
        if not handle.done and not handle.finishing:
            await turn.finish_uncancellable(None, Run.Status.CANCELLED, None, None)
    finally:
        turn.close()
