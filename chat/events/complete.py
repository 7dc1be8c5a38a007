"""The `complete` event: its model, its payload (also the body of POST /api/chat) and the payload's one builder."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, TypeAdapter, ValidationError

from chat.events.base import Envelope, Frame, RunEvent, omit_none
from chat.events.rendering import render_markdown
from chat.events.suggestions import SuggestedAction, SuggestedValue


class CustomPayload(Frame):
    """The turn's card (a tool's, an action's or the model's payload); earlier ones are named in the prompt by id."""

    payload_id: str
    type: str
    data: Any
    summary: str
    title: str | None = Field(default=None, exclude_if=omit_none, description=(
        "Addition to v1: the payload type's title (\"Stream ideas\"), what a card is headed with where the client has no "
        "renderer of its own for the type. Absent from servers before it and from answers stored before it."))


class ToolUse(Frame):
    """One tool call of the turn, in order; `[[tool:N]]` in the message marks where the Nth renders."""

    tool_name: str
    input: dict[str, Any]
    output: str
    title: str | None = Field(default=None, exclude_if=omit_none, description=(
        "Addition to v1: the tool's title (\"Search articles\"), what its card is headed with; `tool_name` stays its name. "
        "Absent from servers before it and from answers stored before it."))


class TokenUsage(Frame):
    input_tokens: int = Field(ge=0, description="input tokens not read from or written to the prompt cache")
    output_tokens: int = Field(ge=0)
    cache_read_tokens: int = Field(default=0, ge=0, description="input tokens read from the provider's prompt cache")
    cache_write_tokens: int = Field(default=0, ge=0, description="input tokens written to the provider's prompt cache")


class Change(Frame):
    """One record an approved tool or a server action changed, so the page beside the chat can show it at once."""

    entity: str = Field(min_length=1, max_length=100, description="the kind of record, e.g. `research_stream`")
    id: int | str = Field(description="which record")
    kind: Literal["created", "updated", "deleted"]
    fields: dict[str, Any] | None = Field(default=None, exclude_if=omit_none,
                                          description="the fields that changed, with their new values (what a page can show without a reload)")


MAX_CHANGES = 50  # a card of news for the page, not a data dump
_CHANGE = TypeAdapter(Change)


def changes_clean(raw: Any) -> list[dict[str, Any]]:
    """The valid changes of what a tool or an action declared, as wire dicts (at most MAX_CHANGES); an invalid one is
    left out, never fails the turn (its own code declared it: a page only misses one update)."""
    if not isinstance(raw, (list, tuple)):
        return []
    out: list[dict[str, Any]] = []
    for item in raw[:MAX_CHANGES]:
        try:
            out.append(_CHANGE.validate_python(item).model_dump(mode="json"))
        except ValidationError:
            continue
    return out


class ActionResult(Frame):
    """How the server action the user clicked ended; only on the turn that answers the click."""

    action: str
    status: Literal["succeeded", "failed", "rejected"]
    refresh: bool = Field(default=False, description="the action changed what the page shows: reload it")
    changes: list[Change] | None = Field(default=None, exclude_if=omit_none, description=(
        "Addition to v1: what the action changed (its handler's `ServerActionResult.changes`), only when it succeeded "
        "and declared any; the tray tells the page with `pagechat:changed`"))


class SourceRef(Frame):
    """Addition to v1: one object a search of the turn found (tools.sources); the answer cites it as `[n]`."""

    n: int = Field(ge=1, description="its number in the answer's references (`[n]`)")
    id: str = Field(description="the object's primary key, as text")
    title: str
    url: str = Field(description="the object's page (relative to the site, or absolute); \"\" when it has none")
    snippet: str
    source: str = Field(description="the source's name, e.g. `articles`")
    tool_use_id: str = Field(description="the tool call that found it first")


class CompletePayload(Frame):
    """The answer: also the body of `POST /api/chat`."""

    message: str
    message_html: str
    suggested_values: list[SuggestedValue]
    suggested_actions: list[SuggestedAction]
    custom_payload: CustomPayload | None
    tool_history: list[ToolUse]
    conversation_id: int
    message_id: int | None
    run_id: str
    usage: TokenUsage
    action_result: ActionResult | None = Field(default=None, exclude_if=omit_none, description="server action turns only")
    stop_reason: Literal["max_tokens", "max_iterations"] | None = Field(
        default=None, exclude_if=omit_none,
        description="only when the answer is unfinished: the model reached its output limit (CHAT_MAX_TOKENS) or the turn its "
                    "limit of model calls (CHAT_MAX_ITERATIONS); a client may offer to continue",
    )
    diagnostics: dict[str, Any] | None = Field(default=None, exclude_if=omit_none, description="staff users only")
    sources: list[SourceRef] | None = Field(default=None, exclude_if=omit_none, description=(
        "Addition to v1: what the turn's searches found (only what the user may see), numbered as the answer cites them; "
        "absent when the turn searched no source, from servers before it and from answers stored before it"))


def complete_payload_build(
    *, message: str, suggested_values: Sequence[Mapping[str, Any]], suggested_actions: Sequence[Mapping[str, Any]],
    custom_payload: Mapping[str, Any] | None, tool_history: Sequence[Mapping[str, Any]], conversation_id: int,
    message_id: int | None, run_id: str, usage: Mapping[str, int], diagnostics: Mapping[str, Any] | None = None,
    action_result: Mapping[str, Any] | None = None, stop_reason: str | None = None,
    sources: Sequence[Mapping[str, Any]] | None = None,
) -> CompletePayload:
    """The one builder of `complete.payload`, for a live turn and for a stored run alike (renders message_html)."""
    return CompletePayload.model_validate({
        "message": message, "message_html": render_markdown(message), "suggested_values": suggested_values,
        "suggested_actions": suggested_actions, "custom_payload": custom_payload, "tool_history": tool_history,
        "conversation_id": conversation_id, "message_id": message_id, "run_id": run_id, "usage": usage,
        "diagnostics": diagnostics, "action_result": action_result, "stop_reason": stop_reason, "sources": sources or None,
    })


class CompleteEvent(RunEvent):
    """Terminal: the answer."""

    type: Literal["complete"] = "complete"
    payload: CompletePayload
    terminal: ClassVar[bool] = True

    @classmethod
    def wire(cls, env: Envelope, seq: int, *, payload: CompletePayload) -> str:
        return cls.build(env, seq, payload=payload).model_dump_json()
