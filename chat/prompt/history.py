"""Provider messages built from stored history: a turn's messages within a token budget, tool calls paired with
their results, and every stored result the model reads fenced as data."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chat.agent.data import as_data

CHARS_PER_TOKEN = 4
ATTACHMENT_TOKENS = 1600  # what one attachment counts against the history budget (about one image's tokens)
# The result a tool call gets in later history when its run ended while it ran (side effects at most once).
TOOL_INTERRUPTED_RESULT = ("Error: interrupted - the run ended while this tool was running. It may or may not have taken "
                           "effect, and it was not run again. Tell the user; do not repeat it unless they ask.")


@dataclass(frozen=True)
class StoredMessage:
    """A persisted message as history needs it."""

    role: str
    content: str
    provider_messages: list[dict[str, Any]] = field(default_factory=list)
    # the message's attachments as placeholder blocks (chat.userdata.blocks.placeholder_block), resolved per provider
    attachments: list[dict[str, Any]] = field(default_factory=list)


def plain_answer_messages(text: str) -> list[dict[str, Any]]:
    """The provider messages of an answer that was one text block: what is stored for it when it differs from its
    text (chat.turns.persistence.provider_messages_stored), and what history rebuilds from its text otherwise."""
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def estimate_tokens(value: Any) -> int:
    """A cheap, stable token estimate (chars / 4)."""
    if isinstance(value, str):
        return len(value) // CHARS_PER_TOKEN + 1
    if isinstance(value, list):  # blocks: a text block by its text, so a long answer is not serialised on every turn
        return sum(len(b["text"]) if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                   else len(json.dumps(b, default=str)) for b in value) // CHARS_PER_TOKEN + 1
    return len(json.dumps(value, default=str)) // CHARS_PER_TOKEN + 1


def history_build(stored: Iterable[StoredMessage], *, budget_tokens: int) -> list[dict[str, Any]]:
    """Provider messages from history: every tool_use paired, whole turns trimmed oldest-first to the budget."""
    turns: list[list[dict[str, Any]]] = []
    for m in stored:
        if m.role == "user" and m.provider_messages:
            if turns:  # a client's answers to the tool calls that ended the turn before: that turn goes on
                _results_append(turns[-1], m.provider_messages)
        elif m.role == "user" and m.attachments:  # files first, then the words about them
            turns.append([{"role": "user", "content": [*m.attachments, {"type": "text", "text": m.content or "(see the attachments)"}]}])
        elif m.role == "user":
            turns.append([{"role": "user", "content": m.content or "(empty message)"}])
        elif turns:
            blocks = [_results_refenced(pm) for pm in m.provider_messages] if m.provider_messages else (
                [{"role": "assistant", "content": m.content}] if m.content.strip() else []
            )
            turns[-1].extend(blocks)
    turns = [_paired(turn) for turn in turns]
    # the last turn (the current user message) is always kept; older ones while they fit
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for turn in reversed(turns):
        cost = sum(estimate_tokens(msg["content"]) + ATTACHMENT_TOKENS * _attachment_count(msg) for msg in turn)
        if kept and used + cost > budget_tokens:
            break
        kept.append(turn)
        used += cost
    messages = [msg for turn in reversed(kept) for msg in turn]
    return _merge_roles(messages)


def _attachment_count(msg: dict[str, Any]) -> int:
    content = msg["content"]
    return sum(1 for b in content if isinstance(b, dict) and b.get("type") == "attachment") if isinstance(content, list) else 0


def _results_append(turn: list[dict[str, Any]], provider_messages: list[dict[str, Any]]) -> None:
    """Add the client's tool_result blocks to the turn's last tool-result message (or a new one after its assistant
    message), each fenced as data like a server tool's result (chat.agent.loop)."""
    names = {b.get("id"): b.get("name") for m in turn if m["role"] == "assistant" and isinstance(m["content"], list)
             for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
    # what a client's tool returns is as untrusted as a server tool's result: its text is never instructions
    results = [{**b, "content": as_data(f"tool:{names.get(b.get('tool_use_id')) or 'client'}", _result_text(b.get("content")))}
               for pm in provider_messages if isinstance(pm.get("content"), list)
               for b in pm["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    if turn and turn[-1]["role"] == "user" and isinstance(turn[-1]["content"], list):
        turn[-1] = {"role": "user", "content": [*turn[-1]["content"], *results]}
    else:
        turn.append({"role": "user", "content": results})


_STORED_BLOCK = re.compile(r'\A<data source="([^"]*)">\n(.*)\n</data>\Z', re.S)


def _results_refenced(message: dict[str, Any]) -> dict[str, Any]:
    """A stored message with its tool results' data blocks escaped again: a row written before the fence caught every
    form of a closing tag (docs/hardening.md) holds the text as it was then; escaping twice changes nothing."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return message
    out = []
    for b in content:
        m = _STORED_BLOCK.match(b["content"]) if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("content"), str) else None
        out.append({**b, "content": as_data(m.group(1), m.group(2))} if m else b)
    return {**message, "content": out}


def _result_text(content: Any) -> str:
    """A stored tool result's content as text (the client's answer is a string; anything else as JSON)."""
    return content if isinstance(content, str) else json.dumps(content, default=str, ensure_ascii=False)


def _paired(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every tool_use a tool_result (an error one if the run died before it had one)."""
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(msgs):
        out.append(msg)
        if msg["role"] != "assistant" or not isinstance(msg["content"], list):
            continue
        uses = [b["id"] for b in msg["content"] if b.get("type") == "tool_use"]
        if not uses:
            continue
        nxt = msgs[i + 1] if i + 1 < len(msgs) else None
        answered = {
            b.get("tool_use_id") for b in (nxt["content"] if nxt and isinstance(nxt["content"], list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        } if nxt and nxt["role"] == "user" else set()
        missing = [u for u in uses if u not in answered]
        if missing:
            synth = [{"type": "tool_result", "tool_use_id": u, "content": TOOL_INTERRUPTED_RESULT, "is_error": True} for u in missing]
            if nxt is not None and nxt["role"] == "user" and isinstance(nxt["content"], list):
                nxt["content"] = [*nxt["content"], *synth]
            else:
                out.append({"role": "user", "content": synth})
    return out


def _merge_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge consecutive same-role messages (providers want alternation), starting with the user."""
    merged: list[dict[str, Any]] = []
    for msg in messages:
        if merged and merged[-1]["role"] == msg["role"]:
            merged[-1] = {"role": msg["role"], "content": _as_blocks(merged[-1]["content"]) + _as_blocks(msg["content"])}
        else:
            merged.append(dict(msg))
    while merged and merged[0]["role"] != "user":
        merged.pop(0)
    return merged


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        # tool_result blocks must come first in a user message
        return sorted(content, key=lambda b: 0 if b.get("type") == "tool_result" else 1)
    return [{"type": "text", "text": content}] if content else []
