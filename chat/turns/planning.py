"""What one model turn needs, assembled from the registries, the page and the stored history."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chat import selectors
from chat.agent.types import AgentTool
from chat.conf import chat_settings
from chat.events import ChatSend
from chat.infra.registration import title_shown
from chat.prompt.history import StoredMessage, history_build
from chat.prompt.system import PromptInput, system_prompt_build
from chat.providers.base import Provider
from chat.turns.clients import ClientTool
from chat.userdata.blocks import blocks_redact, blocks_resolve
from pages.access import Access, access_for, server_action_denied
from pages.registry import BUILTIN_CLIENT_ACTIONS, PageSpec, registry as page_registry
from payloads.registry import registry as payload_registry
from payloads.spec import PayloadSpec
from tools.access import tools_filter
from tools.mcp import mcp_page_tool_names
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
    # the page's server actions this user may run (only these are offered and signed); None: all of them
    # (turn_plan_build always sets it)
    allowed_actions: frozenset[str] | None = None
    # tool name -> its title in the turn's language, what people read for it (events, cards, the prompt)
    tool_titles: dict[str, str] = field(default_factory=dict)
    # what `system` was written from: handed to the provider with it (the offline model reads this, not the text)
    prompt: PromptInput | None = None


def public_action_metadata(frame: ChatSend) -> dict[str, Any] | None:
    """The clicked action without its token (what is stored and shown to the model)."""
    if frame.action_metadata is None:
        return None
    return {"action_identifier": frame.action_metadata.action_identifier, "action_data": frame.action_metadata.action_data}


def page_of(frame: ChatSend) -> PageSpec:
    """The page the message was sent from (the default page when it names none)."""
    return page_registry.get(str(frame.context.get("current_page") or ""))


def turn_plan_build(*, user: User, conversation_id: int, frame: ChatSend, upto_message_id: int | None = None,
                    new_conversation: bool = False, client_tools: Sequence[ClientTool] = (), user_message_id: int | None = None,
                    provider: Provider | None = None) -> TurnPlan:
    """System prompt (page-aware), tools (global + page + tab + subtab - disabled, then the client's own) and history.

    `new_conversation`: the turn's own user message is the conversation's only stored message (no history read).
    `provider`: what its model can read decides whether attachments go as image/document blocks or as notes.
    """
    context = dict(frame.context)
    page = page_of(frame)
    access = access_for(user)
    tools, withheld = _tools(page, context, access)
    actions = [a for a in page.server_actions if server_action_denied(access, a) is None]
    actions_withheld = {a.action: reason for a in page.server_actions if (reason := server_action_denied(access, a))}
    client_titles: dict[str, str] = {}
    for ct in client_tools:  # a server tool of the same name wins: the client cannot replace what the page offers
        if ct.name not in tools and ct.title:
            client_titles[ct.name] = ct.title
        tools.setdefault(ct.name, AgentTool(name=ct.name, description=ct.description, input_schema=ct.parameters,
                                            executor=_client_runs_it, client_side=not ct.in_tab, in_tab=ct.in_tab,
                                            requires_approval=ct.requires_approval))
    titles = {name: client_titles.get(name) or tool_title(name) for name in tools}
    payload_specs = [p for p in payload_registry.all() if p.is_global] + [
        p for name in page.payload_types(context) if (p := payload_registry.get(name)) is not None
    ]
    payload_specs = list({p.type: p for p in payload_specs}.values())
    markers = {p.parse_marker: p for p in payload_specs if p.source == "llm" and p.parse_marker}
    stored, manifest = _history(conversation_id, frame, upto_message_id, new_conversation, user_message_id)
    prompt_input = PromptInput(
        identity=page.identity or PromptInput.identity,
        context_text=_page_context(page, context, user),
        request_context=context,
        interaction_type=frame.interaction_type,
        action_metadata=public_action_metadata(frame),
        manifest=manifest,
        tools=[(t.name, t.description) for t in tools.values()],
        tool_titles=titles,
        page_title=page.display_title() if page.name in page_registry else "",
        tab_title=chain[0].display_title() if (chain := page.tab_chain(context)) else "",
        payload_instructions=[p.instructions() for p in payload_specs if p.source == "llm"],
        client_actions=[(a.action, a.description, a.parameters) for a in (*BUILTIN_CLIENT_ACTIONS, *page.client_actions)],
        server_actions=[(a.action, a.description, a.parameters) for a in actions],
        custom_instructions=page.custom_instructions,
        user_preferences=selectors.preferences_instructions(user_id=user.pk),
        language=frame.language,
        page_state=frame.state,
    )
    system = system_prompt_build(prompt_input)
    messages = history_build(stored, budget_tokens=chat_settings.CHAT_HISTORY_TOKEN_BUDGET)
    sent_files = [{k: b[k] for k in ("id", "name", "content_type", "size")}
                  for m in messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "attachment"]
    messages = blocks_resolve(messages, images=bool(provider and provider.supports_images),
                              documents=bool(provider and provider.supports_documents))
    diagnostics = {
        "model": chat_settings.CHAT_MODEL,
        "max_tokens": chat_settings.CHAT_MAX_TOKENS,
        "max_iterations": chat_settings.CHAT_MAX_ITERATIONS,
        "temperature": chat_settings.CHAT_TEMPERATURE,
        "tools": list(tools),
        "tools_withheld": withheld,  # name -> why this user is not offered it (permission, group)
        "server_actions_withheld": actions_withheld,
        "system_prompt": system,
        "messages": blocks_redact(messages) if sent_files else messages,  # never the files' bytes
        "attachments": sent_files,
        "context": context,
        "page": page.name,
    }
    return TurnPlan(system=system, messages=messages, tools=tools, page=page, payload_markers=markers, diagnostics=diagnostics,
                    allowed_actions=frozenset(a.action for a in actions), tool_titles=titles, prompt=prompt_input)


def tool_title(name: str) -> str:
    """The title people read for the tool called `name`, in the active language: the registered tool's own, else
    derived from the name (a client's tool, one unregistered since)."""
    spec = tool_registry.get(name)
    return spec.display_title() if spec is not None else title_shown("", name)


def _client_runs_it(tool_input: dict[str, Any], ctx: Any) -> str:
    """Never called: the loop stops at a client tool's call (the client answers in its next request); a tab's tool is
    given the turn's own executor (chat.turns.tab_tools)."""
    raise RuntimeError("a client tool runs in the client")


def _history(conversation_id: int, frame: ChatSend, upto_message_id: int | None,
             new_conversation: bool, user_message_id: int | None = None) -> tuple[list[StoredMessage], list[dict[str, Any]]]:
    """The stored history window and its payload manifest; a client's own history only for a conversation with none."""
    if new_conversation or (frame.conversation_history and not selectors.history_exists(conversation_id=conversation_id, before_id=upto_message_id)):
        stored = [StoredMessage(h.role, h.content) for h in frame.conversation_history or []]
        files = selectors.message_attachment_blocks(message_id=user_message_id) if frame.attachments and user_message_id else []
        stored.append(StoredMessage("user", frame.message, [], files))
        return stored, []
    return selectors.history_window(conversation_id=conversation_id, limit=HISTORY_MESSAGE_LIMIT, upto_id=upto_message_id)


def _tools(page: PageSpec, context: dict[str, Any], access: Access) -> tuple[dict[str, AgentTool], dict[str, str]]:
    """The page's tools this user may use as the loop sees them, with staff overrides (disabled, approval,
    description) applied; and the withheld ones with the reason (a call to one is an unknown tool: never run)."""
    overrides = tool_overrides()
    disabled = {name for name, o in overrides.items() if not o.enabled}
    # the MCP servers' tools staff enabled on this page (the registry follows the admin's server rows each turn)
    names = [*page.tool_names(context), *mcp_page_tool_names(page=page.name)]
    split = tools_filter(access, tool_registry.resolve(names, disabled=disabled))
    specs = split.allowed
    return {
        s.name: s.as_agent_tool(
            description=(overrides[s.name].description or None) if s.name in overrides else None,
            requires_approval=(overrides[s.name].requires_approval or s.requires_approval) if s.name in overrides else None,
        )
        for s in specs
    }, split.withheld


def _page_context(page: PageSpec, context: dict[str, Any], user: User) -> str:
    """The page's context builder's text; a failing builder must not fail the turn."""
    if page.context_builder is None:
        return ""
    try:
        return str(page.context_builder(context, user))
    except Exception:
        log.exception("context builder of page %s failed", page.name)
        return "(The page context could not be loaded.)"
