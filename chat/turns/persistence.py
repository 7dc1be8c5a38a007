"""A turn's database writes after admission: its assistant message, text flushes while streaming, the final save."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F, TextField, Value
from django.db.models.functions import Concat
from django.utils import timezone

from chat.events.errors import ErrorCode
from chat.infra.rows import row_create, row_update
from chat.models import ClientToolWait, Conversation, Message, PendingApproval, Run, ToolCall, action_stat_count
from chat.prompt.history import plain_answer_messages
from chat.turns.clients import AnsweredCall, ClientTool

# A run's terminal status -> its assistant message's status.
MESSAGE_STATUS: dict[str, str] = {
    Run.Status.COMPLETED: Message.Status.COMPLETE, Run.Status.CANCELLED: Message.Status.CANCELLED,
    Run.Status.ERROR: Message.Status.ERROR, Run.Status.INTERRUPTED: Message.Status.INTERRUPTED,
}


@dataclass
class TurnRecord:
    """The rows of a started turn (its run and user message are stored at admission)."""

    run_id: str
    conversation_id: int
    user_message_id: int
    assistant_message_id: int  # stored at admission, with the run, empty and streaming
    conversation_created: bool = False
    retitle: bool = False  # an edit of the conversation's first question: its title is generated again after the answer
    action_refusal: str | None = None  # a server action that is answered with this reason instead of run
    started: float = field(default_factory=time.perf_counter)
    client_tools: tuple[ClientTool, ...] = ()  # offered to the model (a standard client's end the run; the tab's run there)
    tab_id: str | None = None  # the sending tab (chat.send.tab_id): the only one that runs the turn's frontend tool calls
    answered_calls: list[AnsweredCall] = field(default_factory=list)  # the client's answers this run continues from
    tools_started: bool = False  # a tool call of this run was recorded as started (only then can one be left open)


@dataclass
class TurnOutcome:
    """Everything the final save writes."""

    status: str
    text: str
    suggested_values: list[dict[str, Any]]
    suggested_actions: list[dict[str, Any]]
    custom_payload: dict[str, Any] | None
    payloads: list[dict[str, Any]]
    tool_history: list[dict[str, Any]]
    provider_messages: list[dict[str, Any]]
    tool_calls: list[ToolCall]
    diagnostics: dict[str, Any]
    usage: dict[str, int]
    cost: float | None
    ttft: float | None
    duration: float
    error: tuple[ErrorCode, str] | None
    last_seq: int
    page: str = ""
    offered_actions: list[str] = field(default_factory=list)  # server actions offered as buttons (analytics)
    stop_reason: str = ""  # Message.StopReason when the answer is unfinished, else blank


def assistant_message_create(*, conversation_id: int, run_id: str) -> int:
    """The (streaming) assistant message the run's text is flushed into (stored at admission, with its run)."""
    return int(row_create(Message, {
        "conversation_id": conversation_id, "role": Message.Role.ASSISTANT, "status": Message.Status.STREAMING, "run_id": run_id,
    }))


def assistant_message_flush(*, message_id: int, content: str, provider_messages: list[dict[str, Any]]) -> None:
    """Save the text followers have seen so far (never per token: the turn calls this on a doubling window)."""
    Message.objects.filter(pk=message_id, status=Message.Status.STREAMING).update(
        content=content, provider_messages=provider_messages, updated_at=timezone.now()
    )


def assistant_message_append(*, message_id: int, delta: str, provider_messages: list[dict[str, Any]] | None) -> None:
    """Append the text streamed since the last flush: the database gets each byte once, never the whole text again.

    `provider_messages` only when they changed (a model call ended)."""
    fields: dict[str, Any] = {"updated_at": timezone.now()}
    if delta:
        fields["content"] = Concat(F("content"), Value(delta), output_field=TextField())
    if provider_messages is not None:
        fields["provider_messages"] = provider_messages
    Message.objects.filter(pk=message_id, status=Message.Status.STREAMING).update(**fields)


def provider_messages_stored(provider_messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """What an answer's `provider_messages` column keeps: nothing when the model's output was one text block equal to
    the stored text (history rebuilds exactly that block from `content`: `chat.prompt.history.history_build`), else all of
    it. Most answers are plain text: stored once instead of twice, and not parsed again on every later turn."""
    if provider_messages == plain_answer_messages(text):
        return []
    return provider_messages


TOOL_INTERRUPTED = "The server process stopped while this tool ran; it may or may not have taken effect and was not run again."


def tool_call_started(*, run_id: str, index: int, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> None:
    """Record a tool call as started before it runs (at most once: a crash leaves it `started`, then `interrupted`)."""
    ToolCall.objects.get_or_create(run_id=run_id, tool_use_id=tool_use_id, defaults={
        "index": index, "name": name, "input": tool_input, "status": ToolCall.Status.STARTED})


def approval_record(*, run_id: str, tool_use_id: str, tool_name: str, tool_input: dict[str, Any]) -> None:
    """The pending approval the user's answer is written into (the owner polls it if the doorbell is lost)."""
    PendingApproval.objects.get_or_create(run_id=run_id, tool_use_id=tool_use_id, defaults={"tool_name": tool_name, "input": tool_input})


def tab_wait_record(*, run_id: str, tool_use_id: str, tool_name: str, tab_id: str) -> None:
    """The frontend tool call the tab's answer is written into (the owner polls it if the doorbell is lost)."""
    ClientToolWait.objects.get_or_create(run_id=run_id, tool_use_id=tool_use_id, defaults={"tool_name": tool_name, "tab_id": tab_id})


def tab_wait_close(*, run_id: str, tool_use_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """Answer the call with `result` (the run stops waiting) unless it was answered meanwhile; the answer that stands."""
    with transaction.atomic():
        if ClientToolWait.objects.filter(run_id=run_id, tool_use_id=tool_use_id, answered_at__isnull=True).update(
                result=result, answered_at=timezone.now()):
            return result
        stored = ClientToolWait.objects.filter(run_id=run_id, tool_use_id=tool_use_id).values_list("result", flat=True).first()
        return stored or result


def turn_persist(*, record: TurnRecord, outcome: TurnOutcome) -> None:
    """Save the message, tool calls and diagnostics; a run the sweep already declared interrupted keeps that verdict."""
    error = outcome.error
    msg_status = MESSAGE_STATUS[outcome.status]
    with transaction.atomic():
        if outcome.tool_calls:  # they ran, whatever happens to the run's verdict (their `started` rows get the result)
            ToolCall.objects.bulk_create(outcome.tool_calls, update_conflicts=True, unique_fields=["run", "tool_use_id"],
                                         update_fields=["index", "name", "input", "output", "status", "duration_ms", "error"])
        if record.tools_started:  # started but never finished (cancelled or interrupted mid-tool): never run again
            ToolCall.objects.filter(run_id=record.run_id, status=ToolCall.Status.STARTED).update(
                status=ToolCall.Status.INTERRUPTED, error=TOOL_INTERRUPTED)
        finished = row_update(Run, record.run_id, {"status": Run.Status.RUNNING}, {
            "status": outcome.status, "assistant_message": record.assistant_message_id, "input_tokens": outcome.usage["input_tokens"],
            "output_tokens": outcome.usage["output_tokens"], "cache_read_tokens": outcome.usage.get("cache_read_tokens", 0),
            "cache_write_tokens": outcome.usage.get("cache_write_tokens", 0),
            "cost_usd": Decimal(str(outcome.cost)) if outcome.cost is not None else None, "time_to_first_token_ms": outcome.ttft,
            "duration_ms": outcome.duration, "diagnostics": outcome.diagnostics, "finished_at": timezone.now(), "last_seq": outcome.last_seq,
            "error_code": error[0] if error else "", "error_message": error[1] if error else "",
        })
        if not finished:
            return
        row_update(Message, record.assistant_message_id, {}, {
            "content": outcome.text, "status": msg_status, "suggested_values": outcome.suggested_values,
            "suggested_actions": outcome.suggested_actions, "custom_payload": outcome.custom_payload,
            "payloads": outcome.payloads, "tool_history": outcome.tool_history,
            "provider_messages": provider_messages_stored(outcome.provider_messages, outcome.text),
            "stop_reason": outcome.stop_reason, "updated_at": timezone.now(),
        })
        for name, count in Counter(outcome.offered_actions).items():
            action_stat_count(page=outcome.page, action=name, fields=("offered",), by=count)
        if not record.conversation_created:  # a new conversation's row is already this fresh
            row_update(Conversation, record.conversation_id, {}, {"updated_at": timezone.now()})
