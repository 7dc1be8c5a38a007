"""What one model turn needs, assembled from the registries, the page and the stored history."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chat import selectors
from chat.agent.types import AgentTool
from chat.conf import chat_settings
from chat.events import ChatSend
from chat.prompt import PromptInput, StoredMessage, history_build, system_prompt_build
from pages.registry import BUILTIN_CLIENT_ACTIONS, PageSpec, registry as page_registry
from payloads.registry import registry as payload_registry
from payloads.spec import PayloadSpec
from tools.registry import registry as tool_registry
from tools.services import tool_overrides

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)
HISTORY_MESSAGE_LIMIT = 60  # stored messages loaded per turn: turn cost must not grow with the conversation


@dataclass
class TurnPlan:
    """What one model turn needs, assembled from the registries and the stored history."""

    system: str
    messages: list[dict[str, Any]]
    tools: dict[str, AgentTool]
    page: PageSpec
    payload_markers: dict[str, PayloadSpec]  # marker -> spec of the payloads the model may emit
    diagnostics: dict[str, Any]


def public_action_metadata(frame: ChatSend) -> dict[str, Any] | None:
    """The clicked action without its token (what is stored and shown to the model)."""
    if frame.action_metadata is None:
        return None
    return {"action_identifier": frame.action_metadata.action_identifier, "action_data": frame.action_metadata.action_data}


def page_of(frame: ChatSend) -> PageSpec:
    """The page the message was sent from (the default page when it names none)."""
    return page_registry.get(str(frame.context.get("current_page") or ""))


def turn_plan_build(*, user: User, conversation_id: int, frame: ChatSend, upto_message_id: int | None = None) -> TurnPlan:
    """System prompt (page-aware), tools (global + page + tab + subtab - disabled) and history messages."""
    context = dict(frame.context)
    page = page_of(frame)
    tools = _tools(page, context)
    payload_specs = [p for p in payload_registry.all() if p.is_global] + [
        p for name in page.payload_types(context) if (p := payload_registry.get(name)) is not None
    ]
    payload_specs = list({p.type: p for p in payload_specs}.values())
    markers = {p.parse_marker: p for p in payload_specs if p.source == "llm" and p.parse_marker}
    prompt_input = PromptInput(
        identity=page.identity or PromptInput.identity,
        context_text=_page_context(page, context, user),
        request_context=context,
        interaction_type=frame.interaction_type,
        action_metadata=public_action_metadata(frame),
        manifest=selectors.payload_manifest(conversation_id=conversation_id),
        tools=[(t.name, t.description) for t in tools.values()],
        payload_instructions=[p.instructions() for p in payload_specs if p.source == "llm"],
        client_actions=[(a.action, a.description, a.parameters) for a in (*BUILTIN_CLIENT_ACTIONS, *page.client_actions)],
        server_actions=[(a.action, a.description, a.parameters) for a in page.server_actions],
        custom_instructions=page.custom_instructions,
    )
    system = system_prompt_build(prompt_input)
    if frame.conversation_history and not selectors.history_exists(conversation_id=conversation_id, before_id=upto_message_id):
        stored = [StoredMessage(h.role, h.content) for h in frame.conversation_history]
        stored.append(StoredMessage("user", frame.message))
    else:
        stored = selectors.history_list(conversation_id=conversation_id, limit=HISTORY_MESSAGE_LIMIT, upto_id=upto_message_id)
    messages = history_build(stored, budget_tokens=chat_settings.CHAT_HISTORY_TOKEN_BUDGET)
    diagnostics = {
        "model": chat_settings.CHAT_MODEL,
        "max_tokens": chat_settings.CHAT_MAX_TOKENS,
        "max_iterations": chat_settings.CHAT_MAX_ITERATIONS,
        "temperature": chat_settings.CHAT_TEMPERATURE,
        "tools": list(tools),
        "system_prompt": system,
        "messages": messages,
        "context": context,
        "page": page.name,
    }
    return TurnPlan(system=system, messages=messages, tools=tools, page=page, payload_markers=markers, diagnostics=diagnostics)


def _tools(page: PageSpec, context: dict[str, Any]) -> dict[str, AgentTool]:
    """The page's tools as the loop sees them, with staff overrides (disabled, approval, description) applied."""
    overrides = tool_overrides()
    disabled = {name for name, o in overrides.items() if not o.enabled}
    specs = tool_registry.resolve(page.tool_names(context), disabled=disabled)
    return {
        s.name: s.as_agent_tool(
            description=(overrides[s.name].description or None) if s.name in overrides else None,
            requires_approval=(overrides[s.name].requires_approval or s.requires_approval) if s.name in overrides else None,
        )
        for s in specs
    }


def _page_context(page: PageSpec, context: dict[str, Any], user: User) -> str:
    """The page's context builder's text; a failing builder must not fail the turn."""
    if page.context_builder is None:
        return ""
    try:
        return str(page.context_builder(context, user))
    except Exception:
        log.exception("context builder of page %s failed", page.name)
        return "(The page context could not be loaded.)"
