"""A turn's database writes after admission: its assistant message, text flushes while streaming, the final save."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from chat.errors import ErrorCode
from chat.models import Conversation, Message, PendingApproval, Run, ToolCall

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
    conversation_created: bool = False
    assistant_message_id: int | None = None  # created by the run itself, off the acknowledgement's path
    started: float = field(default_factory=time.perf_counter)


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
    ttft: float | None
    duration: float
    error: tuple[ErrorCode, str] | None
    last_seq: int


def assistant_message_create(*, record: TurnRecord) -> int:
    """The (streaming) assistant message the turn's text is flushed into."""
    record.assistant_message_id = Message.objects.create(
        conversation_id=record.conversation_id, role=Message.Role.ASSISTANT, status=Message.Status.STREAMING,
        run_id=record.run_id,
    ).pk
    return record.assistant_message_id


def assistant_message_flush(*, message_id: int, content: str, provider_messages: list[dict[str, Any]]) -> None:
    """Save the text followers have seen so far (never per token: the turn calls this on a doubling window)."""
    Message.objects.filter(pk=message_id, status=Message.Status.STREAMING).update(
        content=content, provider_messages=provider_messages, updated_at=timezone.now()
    )


def approval_record(*, run_id: str, tool_use_id: str, tool_name: str, tool_input: dict[str, Any]) -> None:
    """The pending approval the user's answer is written into (the owner polls it if the doorbell is lost)."""
    PendingApproval.objects.get_or_create(run_id=run_id, tool_use_id=tool_use_id, defaults={"tool_name": tool_name, "input": tool_input})


def turn_persist(*, record: TurnRecord, outcome: TurnOutcome) -> None:
    """Save the message, tool calls and diagnostics; a run the sweep already declared interrupted keeps that verdict."""
    error = outcome.error
    msg_status = MESSAGE_STATUS[outcome.status]
    with transaction.atomic():
        if outcome.tool_calls:  # they ran, whatever happens to the run's verdict
            ToolCall.objects.bulk_create(outcome.tool_calls, ignore_conflicts=True)
        if record.assistant_message_id is None:  # the run ended before it got to create its message
            record.assistant_message_id = Message.objects.create(
                conversation_id=record.conversation_id, role=Message.Role.ASSISTANT, status=msg_status, run_id=record.run_id,
            ).pk
        finished = Run.objects.filter(pk=record.run_id, status=Run.Status.RUNNING).update(
            status=outcome.status, assistant_message_id=record.assistant_message_id, input_tokens=outcome.usage["input_tokens"],
            output_tokens=outcome.usage["output_tokens"], time_to_first_token_ms=outcome.ttft, duration_ms=outcome.duration,
            diagnostics=outcome.diagnostics, finished_at=timezone.now(), last_seq=outcome.last_seq,
            error_code=error[0] if error else "", error_message=error[1] if error else "",
        )
        if not finished:
            return
        Message.objects.filter(pk=record.assistant_message_id).update(
            content=outcome.text, status=msg_status, suggested_values=outcome.suggested_values,
            suggested_actions=outcome.suggested_actions, custom_payload=outcome.custom_payload,
            payloads=outcome.payloads, tool_history=outcome.tool_history, provider_messages=outcome.provider_messages,
            updated_at=timezone.now(),
        )
        if not record.conversation_created:  # a new conversation's row is already this fresh
            Conversation.objects.filter(pk=record.conversation_id).update(updated_at=timezone.now())
