"""The parts of a finished answer besides its text: quick replies, buttons (server ones signed), payload cards."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from chat.events import suggested_action_read, suggested_value_read
from chat.infra.registration import title_shown
from chat.turns.action_tokens import action_token_sign
from chat.turns.planning import TurnPlan
from pages.registry import BUILTIN_CLIENT_ACTIONS, PageSpec, ServerActionResult
from payloads.parsing import parse_blocks
from payloads.registry import assign_payload_id, registry as payload_registry
from payloads.stream import Extracted

SERVER_ACTION = "server_action"  # the `marker` of parse errors in what a server action handler returned


@dataclass
class AnswerParts:
    """What the answer carries besides its text, as stored and as sent in `complete`."""

    suggested_values: list[dict[str, Any]] = field(default_factory=list)
    suggested_actions: list[dict[str, Any]] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)  # every payload of the turn (stored)
    custom_payload: dict[str, Any] | None = None  # the one the tray shows as the turn's card
    parse_errors: list[dict[str, str]] = field(default_factory=list)


def answer_parts_build(*, plan: TurnPlan, extracted: Iterable[Extracted], tool_payloads: list[dict[str, Any]],
                       action: ServerActionResult | None, user_id: int, conversation_id: int) -> AnswerParts:
    """Parse the held-back blocks, merge the server action's parts, keep only actions the page knows (signing server ones)."""
    specs = {m: p.validator() for m, p in plan.payload_markers.items()}
    parsed = parse_blocks(extracted, specs)
    errors = list(parsed.errors)
    values = [_plain(v) for v in parsed.suggested_values]
    actions = [_plain(a) for a in parsed.suggested_actions]
    payloads = [_payload(p.get("type", "tool"), p.get("data"), "tool") for p in tool_payloads]
    payloads += [_payload(plan.payload_markers[marker].type, data, "llm") for marker, data in parsed.payloads]
    if action is not None:
        values = [*_validated(suggested_value_read, action.suggested_values, errors), *values]
        actions = [*_validated(suggested_action_read, action.suggested_actions, errors), *actions]
        if action.payload:
            payloads.insert(0, _payload(action.payload.get("type", "action"), action.payload.get("data"), "action"))
    actions, dropped = _valid_actions(plan.page, actions, user_id=user_id, conversation_id=conversation_id, allowed=plan.allowed_actions)
    from_tools = [p for p in payloads if p["source"] in ("tool", "action")]
    custom = from_tools[-1] if from_tools else (payloads[0] if payloads else None)
    return AnswerParts(
        suggested_values=values, suggested_actions=actions, payloads=payloads,
        custom_payload={k: custom[k] for k in ("payload_id", "type", "data", "summary", "title")} if custom else None,
        parse_errors=[*errors, *dropped],
    )


def _plain(value: BaseModel) -> dict[str, Any]:
    return value.model_dump(exclude_none=True)


def _validated(read: Callable[[Any], BaseModel], items: Iterable[Any], errors: list[dict[str, str]]) -> list[dict[str, Any]]:
    """A handler's suggestions read like the model's (page code may return anything)."""
    out = []
    for k, item in enumerate(items):
        try:
            out.append(_plain(read(item)))
        except ValidationError as exc:
            errors.append({"marker": SERVER_ACTION, "error": f"item {k}: {exc.errors()[0]['msg']}", "raw": str(item)[:200]})
    return out


def _payload(type_: str, data: Any, source: str) -> dict[str, Any]:
    spec = payload_registry.get(type_)
    title = spec.display_title() if spec is not None else title_shown("", type_)
    summary = spec.summary(data) if spec is not None else title
    return {"payload_id": assign_payload_id(), "type": type_, "data": data, "summary": summary, "title": title, "source": source}


def _valid_actions(page: PageSpec, actions: list[dict[str, Any]], *, user_id: int, conversation_id: int,
                   allowed: frozenset[str] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Keep client actions the page or tray knows and server actions with a handler the user may run
    (`allowed`; None: all of the page's); sign the latter - never for a user who may not run it."""
    client_ok = {a.action for a in (*BUILTIN_CLIENT_ACTIONS, *page.client_actions)}
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, str]] = []
    for item in actions:
        handler, name = item.get("handler"), item.get("action")
        if handler == "client" and name in client_ok:
            kept.append(item)
        elif handler == "server" and isinstance(name, str) and page.server_action(name) is not None and allowed is not None and name not in allowed:
            dropped.append({"marker": "SUGGESTED_ACTIONS:", "error": f"server action {name!r} withheld: the user lacks its permissions",
                            "raw": str(item)[:200]})
        elif handler == "server" and isinstance(name, str) and page.server_action(name) is not None:
            token = action_token_sign(user_id=user_id, conversation_id=conversation_id, action=name, data=item.get("data"))
            kept.append({**item, "token": token})
        else:
            dropped.append({"marker": "SUGGESTED_ACTIONS:", "error": f"unknown {handler} action {name!r}", "raw": str(item)[:200]})
    return kept, dropped
