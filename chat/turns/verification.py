"""What a turn may do, checked before it is stored: the page and server action this user may use, a server action's
signed token, and a client's tool results matched to the calls the last answer is waiting for."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from chat.conf import chat_settings
from chat.events import ChatSend
from chat.events.errors import ActionRejected, BadRequest, Forbidden
from chat.models import Conversation, Message
from chat.turns.action_tokens import TokenInvalid, action_token_verify
from chat.turns.clients import AnsweredCall, TurnExtras
from chat.turns.planning import page_of
from pages.access import access_for, page_denied, server_action_denied

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)


def client_calls_answered(conversation: Conversation | None, extras: TurnExtras) -> list[AnsweredCall]:
    """The client's answers matched to the calls that ended the conversation's last run: all of them, or BadRequest.

    Names and inputs come from the stored calls, never from what the client re-sends."""
    if not extras.tool_results:
        return []
    last = conversation.messages.shown().order_by("-id").first() if conversation is not None else None
    pending: dict[str, AnsweredCall] = {}
    if last is not None and last.role == Message.Role.ASSISTANT and last.status == Message.Status.COMPLETE:
        answered = {b.get("tool_use_id") for m in last.provider_messages if m.get("role") == "user" and isinstance(m.get("content"), list)
                    for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}
        for m in last.provider_messages:
            for b in m.get("content") if m.get("role") == "assistant" and isinstance(m.get("content"), list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") not in answered:
                    pending[str(b["id"])] = AnsweredCall(str(b["id"]), str(b.get("name", "")), dict(b.get("input") or {}))
    given = {r.tool_use_id: r.content for r in extras.tool_results}
    if not pending or set(given) != set(pending):
        raise BadRequest("the tool results must answer exactly the tool calls the last answer is waiting for")
    return [AnsweredCall(c.tool_use_id, c.name, c.input, given[c.tool_use_id]) for c in pending.values()]



def access_verify(user: User, frame: ChatSend) -> None:
    """Refuse (`forbidden`, nothing stored) a turn on a page, or a server action, this user may not use."""
    page = page_of(frame)
    access = access_for(user)
    reason = page_denied(access, page)
    if reason is not None:
        log.info("user %s refused on page %s: %s", user.pk, page.name, reason)
        raise Forbidden("You do not have permission to use the assistant on this page.")
    meta = frame.action_metadata
    action = page.server_action(meta.action_identifier) if meta is not None and frame.interaction_type == "action_executed" else None
    if action is not None and (reason := server_action_denied(access, action)) is not None:
        log.info("user %s refused server action %s: %s", user.pk, action.action, reason)
        raise Forbidden("You do not have permission to run this action.")


# Why a server action is answered instead of run (TokenInvalid's reason -> what the user reads).
REFUSALS: dict[str, str] = {
    "missing token": "This button was not offered by the server in this conversation, so it cannot run.",
    "expired token": "This button has expired. Ask again for a fresh one.",
    "bad signature": "This button was altered, so it cannot run.",
    "token is not for this user or conversation": "This button belongs to another conversation, so it cannot run here.",
    "token does not match the action or its data": "This button's data was changed, so it cannot run.",
    "used": "This button was already used.",
    "no conversation": "This button was not offered by the server in this conversation, so it cannot run.",
}


def action_verify(user: User, frame: ChatSend, conversation: Conversation | None) -> tuple[str | None, str | None]:
    """For a server action: (the token's nonce, None) if it may run, or (None, why not) if the turn only answers
    with the reason (unknown, expired, altered or used buttons are never run). Not an action: (None, None)."""
    meta = frame.action_metadata
    if frame.interaction_type != "action_executed":
        return None, None
    if meta is None:
        raise ActionRejected("action_executed needs action_metadata")
    name = meta.action_identifier
    if page_of(frame).server_action(name) is None:
        return None, f"Unknown action: {name}. Nothing was done."
    if conversation is None:
        return None, f"{REFUSALS['no conversation']} Nothing was done."
    try:
        claims = action_token_verify(
            meta.token, user_id=user.pk, conversation_id=conversation.pk, action=name,
            data=meta.action_data, max_age=chat_settings.CHAT_ACTION_TOKEN_MAX_AGE,
        )
    except TokenInvalid as exc:
        return None, f"{REFUSALS.get(str(exc), 'This button is no longer valid.')} Nothing was done."
    return claims.nonce, None
