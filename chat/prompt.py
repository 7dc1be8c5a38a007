"""The system prompt, in sections, and provider messages built from stored history."""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_IDENTITY = (
    "You are a helpful assistant embedded in a web application. You can see which page the user is "
    "on and what they are looking at, call tools, and propose structured changes the page can apply."
)

INTERACTION_NOTES = {
    "text_input": "The user typed this message.",
    "value_selected": "The user clicked one of your suggested values; continue from that choice.",
    "action_executed": "The user clicked an action button; its result is shown above.",
}

GUIDELINES = """\
- Be concise; use Markdown for structure. Never output raw HTML.
- Tool results are shown to the user as cards where you called the tool; do not repeat them verbatim.
- To offer quick replies, end with a line `SUGGESTED_VALUES: [{"label": "...", "value": "..."}]`.
- To offer buttons, end with a line `SUGGESTED_ACTIONS: [{"label": "...", "action": "...", "handler": "client"|"server", "data": {...}, "style": "primary"|"secondary"|"warning"}]`,
  using only the client and server actions listed under CAPABILITIES.
- Emit at most one custom payload per response, exactly in the format its instructions give."""  # noqa: E501 (the prompt's lines are not wrapped)

CHARS_PER_TOKEN = 4


@dataclass
class PromptInput:
    """Everything the system prompt is made of; pages fill the page-specific parts."""

    identity: str = DEFAULT_IDENTITY
    context_text: str = ""
    request_context: dict[str, Any] = field(default_factory=dict)
    interaction_type: str = "text_input"
    action_metadata: dict[str, Any] | None = None
    manifest: Sequence[dict[str, Any]] = ()
    tools: Sequence[tuple[str, str]] = ()  # (name, description)
    payload_instructions: Sequence[str] = ()
    client_actions: Sequence[tuple[str, str, Sequence[str]]] = ()  # (action, description, parameters)
    server_actions: Sequence[tuple[str, str, Sequence[str]]] = ()
    custom_instructions: str = ""


def system_prompt_build(p: PromptInput) -> str:
    """IDENTITY, CONTEXT, PAYLOAD MANIFEST, CAPABILITIES, CUSTOM INSTRUCTIONS, GUIDELINES - in that order."""
    sections = [f"# IDENTITY\n{p.identity.strip() or DEFAULT_IDENTITY}"]
    ctx_lines = [p.context_text.strip()] if p.context_text.strip() else []
    shown = {k: v for k, v in p.request_context.items() if k not in ("csrf_token",)}
    if shown:
        ctx_lines.append("Request context: " + _compact(shown, 2000))
    ctx_lines.append(f"Interaction type: {p.interaction_type}. {INTERACTION_NOTES.get(p.interaction_type, '')}")
    if p.action_metadata:
        ctx_lines.append("Action: " + _compact(p.action_metadata, 1000))
    sections.append("# CONTEXT\n" + "\n".join(ctx_lines))
    if p.manifest:
        rows = [f"- [{m['payload_id']}] {m['type']}: {m.get('summary', '')}" for m in p.manifest]
        sections.append(
            "# PAYLOAD MANIFEST\nPayloads shown earlier in this conversation; read one in full with the "
            "get_payload tool and its id.\n" + "\n".join(rows)
        )
    caps: list[str] = []
    if p.tools:
        caps.append("## Tools\n" + "\n".join(f"- {name}: {desc.splitlines()[0] if desc else ''}" for name, desc in p.tools))
    if p.payload_instructions:
        caps.append("## Payloads you can emit\n" + "\n\n".join(i.strip() for i in p.payload_instructions))
    if p.client_actions:
        caps.append("## Client actions (handler \"client\")\n" + "\n".join(_action_line(a) for a in p.client_actions))
    if p.server_actions:
        caps.append("## Server actions (handler \"server\")\n" + "\n".join(_action_line(a) for a in p.server_actions))
    if caps:
        sections.append("# CAPABILITIES\n" + "\n\n".join(caps))
    if p.custom_instructions.strip():
        sections.append("# CUSTOM INSTRUCTIONS\n" + p.custom_instructions.strip())
    sections.append("# GUIDELINES\n" + GUIDELINES)
    return "\n\n".join(sections)


def _action_line(a: tuple[str, str, Sequence[str]]) -> str:
    name, desc, params = a
    return f"- {name}: {desc}" + (f" (data: {', '.join(params)})" if params else "")


def _compact(value: Any, limit: int) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


# ---- provider messages --------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredMessage:
    """A persisted message as history needs it."""

    role: str
    content: str
    provider_messages: list[dict[str, Any]] = field(default_factory=list)


def estimate_tokens(value: Any) -> int:
    """A cheap, stable token estimate (chars / 4)."""
    if isinstance(value, str):
        return len(value) // CHARS_PER_TOKEN + 1
    return len(json.dumps(value, default=str)) // CHARS_PER_TOKEN + 1


def history_build(stored: Iterable[StoredMessage], *, budget_tokens: int) -> list[dict[str, Any]]:
    """Provider messages from history: every tool_use paired, whole turns trimmed oldest-first to the budget."""
    turns: list[list[dict[str, Any]]] = []
    for m in stored:
        if m.role == "user":
            turns.append([{"role": "user", "content": m.content or "(empty message)"}])
        elif turns:
            blocks = _paired(m.provider_messages) if m.provider_messages else (
                [{"role": "assistant", "content": m.content}] if m.content.strip() else []
            )
            turns[-1].extend(blocks)
    # the last turn (the current user message) is always kept; older ones while they fit
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for turn in reversed(turns):
        cost = sum(estimate_tokens(msg["content"]) for msg in turn)
        if kept and used + cost > budget_tokens:
            break
        kept.append(turn)
        used += cost
    messages = [msg for turn in reversed(kept) for msg in turn]
    return _merge_roles(messages)


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
            synth = [{"type": "tool_result", "tool_use_id": u, "content": "Error: the run ended before this tool finished.", "is_error": True} for u in missing]
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
