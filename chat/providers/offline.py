"""The offline model: deterministic, no network. It reads the request as a model would (messages,
offered tools, the capabilities in the system prompt) and answers with text, tool calls, payloads,
chips and buttons, so every flow of the product runs without a key."""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from chat.providers.base import MessageEnd, Provider, ProviderEvent, ProviderRequest, TextDelta, ToolInputDelta, ToolUseEnd, ToolUseStart, Usage

STOPWORDS = frozenset(
    "a an the and or of for to in on at by with about from into me my i you your we our us it its is are be "
    "can could would should will please help want need like let lets show give find get tell what which who "
    "how some any this that these those do does did some more most new make create up out all there here "
    "as if so just also now then than them they their his her have has had was were been not no yes ok "
    "focus focused based around regarding propose suggest suggestion idea ideas".split()
)
INTRO = "**Offline model** (no API key configured). "
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]+")


def words(text: str) -> set[str]:
    """Content words of `text`, lower-cased and crudely singularised."""
    out = set()
    for w in WORD.findall(text.lower()):
        for part in w.replace("-", "_").split("_"):
            if len(part) > 2 and part not in STOPWORDS:
                out.add(part[:-1] if part.endswith("s") and len(part) > 4 else part)
    return out


@dataclass
class PayloadOffer:
    type: str
    description: str
    marker: str
    example: Any
    instructions: str = ""

    def own_words(self) -> set[str]:
        return words(f"{self.type} {self.description} {self.marker}")


@dataclass
class ActionOffer:
    name: str
    description: str
    handler: str
    params: list[str] = field(default_factory=list)


@dataclass
class Capabilities:
    """What the system prompt says this page can do."""

    payloads: list[PayloadOffer]
    actions: list[ActionOffer]

    @classmethod
    def parse(cls, system: str) -> Capabilities:
        payloads: list[PayloadOffer] = []
        for block in re.split(r"\n(?=### )", system):
            block = re.split(r"\n#{1,2} ", block)[0]  # a payload's block ends at the next section
            head = re.match(r"### (\w+)(?: - (.*))?", block)
            example = re.search(r"Example:\n([A-Z][A-Z0-9_]*:)\s*(.+)", block)
            if head and example:
                try:
                    data = json.loads(example.group(2))
                except ValueError:
                    continue
                payloads.append(PayloadOffer(head.group(1), head.group(2) or "", example.group(1), data, block))
        actions: list[ActionOffer] = []
        for handler in ("client", "server"):
            section = re.search(rf"## \w+ actions \(handler \"{handler}\"\)\n((?:- .*\n?)+)", system)
            for line in (section.group(1).splitlines() if section else []):
                m = re.match(r"- (\w+): (.*?)(?: \(data: (.*)\))?$", line)
                if m:
                    params = [p.strip() for p in (m.group(3) or "").split(",") if p.strip()]
                    actions.append(ActionOffer(m.group(1), m.group(2), handler, params))
        return cls(payloads, actions)


@dataclass
class Reply:
    text: str
    tool: tuple[str, dict[str, Any]] | None = None


class OfflineProvider(Provider):
    """A deterministic stand-in model that streams at `delay` seconds per chunk."""

    name = "offline"
    is_offline = True

    def __init__(self, delay: float = 0.02, **options: Any) -> None:
        super().__init__(**options)
        self.delay = delay

    @classmethod
    def from_settings(cls, settings: Any) -> OfflineProvider:
        return cls(delay=settings.CHAT_OFFLINE_DELAY)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        reply = decide(request)
        out_tokens = 0
        for chunk in _chunks(reply.text):
            out_tokens += 1
            yield TextDelta(chunk)
            if self.delay:
                await asyncio.sleep(self.delay)
            else:
                await asyncio.sleep(0)
        usage = Usage(input_tokens=_estimate(request), output_tokens=out_tokens)
        if reply.tool is None:
            yield MessageEnd("end_turn", usage, raw={"role": "assistant", "content": [{"type": "text", "text": reply.text}]})
            return
        name, tool_input = reply.tool
        tool_id = "toolu_off_" + hashlib.sha1(f"{len(request.messages)}:{name}:{json.dumps(tool_input, sort_keys=True)}".encode()).hexdigest()[:16]
        raw = json.dumps(tool_input)
        yield ToolUseStart(tool_id, name)
        for i in range(0, len(raw), 16):
            yield ToolInputDelta(tool_id, raw[i:i + 16])
        yield ToolUseEnd(tool_id, name, tool_input)
        content = ([{"type": "text", "text": reply.text}] if reply.text else []) + [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]
        yield MessageEnd("tool_use", usage, raw={"role": "assistant", "content": content})


def _chunks(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def _estimate(request: ProviderRequest) -> int:
    return (len(request.system) + len(json.dumps(request.messages, default=str))) // 4


# ---- deciding -------------------------------------------------------------------------------------


def decide(request: ProviderRequest) -> Reply:
    """The whole policy: answer tool results, else call the best-matching tool, else propose a payload, else chat."""
    caps = Capabilities.parse(request.system)
    last = request.messages[-1] if request.messages else {"role": "user", "content": ""}
    results = [b for b in _blocks(last) if b.get("type") == "tool_result"]
    user_text = _last_user_text(request.messages)
    if results:
        return _after_tools(request, results, user_text)
    if request.tool_choice != "none":
        tool = _best_tool(request.tools, user_text)
        if tool is not None:
            return Reply(INTRO + f"I'll use the `{tool['name']}` tool for that.", (tool["name"], _tool_input(tool, user_text)))
    offer = _best_payload(caps.payloads, user_text)
    if offer is not None:
        topic = _topic(user_text, offer)
        asks = re.search(r"SUGGESTED_VALUES: (\[.*?\])(?:\.|\s|$)", offer.instructions)
        if not topic and "{topic}" in json.dumps(offer.example).lower() and asks:
            return Reply(INTRO + f"Happy to prepare a {offer.type.replace('_', ' ')}. Which area should it cover?\n"
                         f"SUGGESTED_VALUES: {asks.group(1)}")
        return Reply(_payload_text(offer, topic or "General", caps))
    return Reply(_smalltalk(request, user_text, caps))


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for msg in reversed(messages):
        if msg.get("role") != "user":
            continue
        if isinstance(msg.get("content"), str):
            return msg["content"]
        texts = [b.get("text", "") for b in _blocks(msg) if b.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def _score(query: set[str], *texts: str) -> int:
    target: set[str] = set()
    for t in texts:
        target |= words(t)
    return len(query & target)


def _best_tool(tools: list[dict[str, Any]], text: str) -> dict[str, Any] | None:
    query = words(text)
    scored = []
    for tool in tools:
        if tool["name"] == "get_payload" and not re.search(r"\b[0-9a-f]{8}\b", text):
            continue
        name_hits = _score(query, tool["name"])
        desc_hits = _score(query, tool.get("description", "").split(".")[0])
        if tool["name"] == "calculate" and re.search(r"\d\s*[-+*/%^]\s*\d", text):
            name_hits += 2
        required = tool.get("input_schema", {}).get("required", [])
        if any(r.endswith("id") for r in required) and re.search(r"\b\d{5,}\b", text):
            name_hits += 2
        score = 2 * name_hits + desc_hits
        if name_hits or desc_hits >= 2:
            scored.append((score, tool))
    if not scored:
        return None
    scored.sort(key=lambda s: -s[0])
    return scored[0][1]


def _tool_input(tool: dict[str, Any], text: str) -> dict[str, Any]:
    """Fill the tool's schema from the user's words: a query from the content words, ids and numbers found."""
    schema = tool.get("input_schema", {})
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    tool_words = words(tool["name"]) | words(tool.get("description", ""))
    numbers = re.findall(r"\b\d+\b", text)
    out: dict[str, Any] = {}
    for name, prop in props.items():
        kind = prop.get("type") or next((t.get("type") for t in prop.get("anyOf", []) if t.get("type") != "null"), "string")
        if "enum" in prop:
            out[name] = next((v for v in prop["enum"] if str(v).lower() in text.lower()), prop["enum"][0])
        elif kind == "string":
            if name == "expression":
                m = re.search(r"[-+*/%().\d\s^]{3,}", text)
                out[name] = (m.group(0).strip() if m else "0").replace("^", "**")
            elif name.endswith("id"):
                m = re.search(r"\b([A-Za-z]*\d[\w-]*|[0-9a-f]{8})\b", text)
                if m or name in required:
                    out[name] = m.group(1) if m else ""
            elif name in required or not out:
                # Compare normalised words: "articles" names the tool's own "article", it is not the subject.
                content = [w for w in re.findall(r"[\w-]+", text) if w.lower() not in STOPWORDS and not (words(w) and words(w) <= tool_words)]
                out[name] = " ".join(content) or text.strip()
        elif kind == "integer" and name in required:
            out[name] = int(numbers[0]) if numbers else int(prop.get("default", 5))
        elif kind == "integer" and numbers and name in ("limit", "max_results", "count"):
            out[name] = min(int(numbers[0]), int(prop.get("maximum", 50)))
    return out


def _best_payload(offers: list[PayloadOffer], text: str) -> PayloadOffer | None:
    query = words(text)
    best = max(offers, key=lambda o: _score(query, o.type, o.description), default=None)
    return best if best is not None and _score(query, best.type, best.description) > 0 else None


def _topic(user_text: str, offer: PayloadOffer) -> str:
    """The user's own subject: their content words that are not about the payload type itself."""
    own = offer.own_words()
    kept = [w for w in re.findall(r"[A-Za-z][\w-]*", user_text) if w.lower() not in STOPWORDS and not (words(w) and words(w) <= own)]
    return " ".join(kept)[:60].strip()


def _payload_text(offer: PayloadOffer, topic: str, caps: Capabilities) -> str:
    data = _adapt(offer.example, topic)
    lines = [INTRO + f"Here is a {offer.type.replace('_', ' ')} based on what you asked. Review it in the panel."]
    lines.append(f"{offer.marker} {json.dumps(data, ensure_ascii=False)}")
    actions = [
        {"label": a.name.replace("_", " ").capitalize(), "action": a.name, "handler": "server", "data": data, "style": "primary"}
        for a in caps.actions if a.handler == "server" and _score(words(offer.type + " " + offer.description), a.name, a.description)
    ][:1]
    if any(a.name == "cancel" for a in caps.actions):
        actions.append({"label": "Cancel", "action": "cancel", "handler": "client", "style": "secondary"})
    if actions:
        lines.append("SUGGESTED_ACTIONS: " + json.dumps(actions, ensure_ascii=False))
    return "\n".join(lines)


def _adapt(example: Any, topic: str) -> Any:
    """The example payload, with `{topic}` placeholders filled with the user's subject."""
    raw = json.dumps(example, ensure_ascii=False)
    raw = raw.replace("{topic}", topic.replace('"', "")).replace("{Topic}", topic.title().replace('"', ""))
    return json.loads(raw)


def _after_tools(request: ProviderRequest, results: list[dict[str, Any]], user_text: str) -> Reply:
    names = _tool_names_for(request.messages, [r.get("tool_use_id") for r in results])
    parts = []
    for r, name in zip(results, names):
        content = r.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        first = text.strip().splitlines()[0] if text.strip() else "(no output)"
        if r.get("is_error"):
            parts.append(f"The `{name}` tool failed: {first[:300]}")
        else:
            more = " The card above has the details." if len(text.strip().splitlines()) > 1 else ""
            parts.append(f"`{name}`: {first[:300].rstrip(':')}.{more}")
    values = [{"label": "Tell me more", "value": f"tell me more about {user_text[:60]}"}]
    body = "Done. " + " ".join(parts) + "\n\nSUGGESTED_VALUES: " + json.dumps(values, ensure_ascii=False)
    return Reply(body)


def _tool_names_for(messages: list[dict[str, Any]], ids: list[Any]) -> list[str]:
    names = {b.get("id"): b.get("name") for m in messages if m.get("role") == "assistant" for b in _blocks(m) if b.get("type") == "tool_use"}
    return [str(names.get(i, "tool")) for i in ids]


def _smalltalk(request: ProviderRequest, user_text: str, caps: Capabilities) -> str:
    """A friendly answer that says what this page can do, with chips for it."""
    page = re.search(r"\"current_page\": \"([\w-]+)\"", request.system)
    where = f" on the **{page.group(1).replace('_', ' ')}** page" if page else ""
    lines = [INTRO + f"You said: “{user_text.strip()[:200]}”. I'm a deterministic stand-in{where}; "
             "I can call this page's tools and propose its payloads when your words match them."]
    values = [
        {"label": t["name"].replace("_", " ").capitalize(), "value": t.get("description", t["name"]).split(".")[0]}
        for t in request.tools if t["name"] not in ("get_payload",)
    ][:3]
    values += [{"label": o.type.replace("_", " ").capitalize(), "value": f"suggest a {o.type.replace('_', ' ')}"} for o in caps.payloads][:2]
    if values:
        lines.append("Try one of these:")
        lines.append("SUGGESTED_VALUES: " + json.dumps(values[:4], ensure_ascii=False))
    return "\n".join(lines)
