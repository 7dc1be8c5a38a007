"""The intents around tools: call the tool the user's words name (its input from their subject or the page's), sum up
the results it got, and call the next tool a clause of the same message asks for."""
from __future__ import annotations

import json
import re
from typing import Any

from django.utils.translation import gettext as _

from chat.providers.offline.messages import data_body, message_text
from chat.providers.offline.phrasing import choice_label, choice_said, field_words, join, values_line
from chat.providers.offline.reading import Reading
from chat.providers.offline.registry import Reply
from chat.providers.offline.words import STOPWORDS, norm, subject_words, tokens, words

# a result line of a source search (tools.sources): "[[source:N]] [optional id] Title — snippet"
SOURCE_LINE = re.compile(r"^(\[\[source:\d+\]\]) (?:\[[^\]]*\] )?(.+?)(?: — .*)?$", re.M)
CITED_MAX = 3
# how the agent loop tells a model that the user denied a tool call (agent.loop), read as a model would read it
DECLINED = re.compile(r"\bdid not approve\b", re.I)


def match_tool_results(r: Reading) -> float:
    return 100 if r.tool_results else 0


def after_tools(r: Reading) -> Reply:
    """Sum up the tool results the model just received."""
    names = r.tool_names_for([res.get("tool_use_id") for res in r.tool_results])
    parts = []
    for res, name in zip(r.tool_results, names):
        content = res.get("content")
        text = data_body(content) if isinstance(content, str) else json.dumps(content)
        first = text.strip().splitlines()[0] if text.strip() else _("(no output)")
        if res.get("is_error") and DECLINED.search(first):  # the user's Deny is their choice, not a failure
            parts.append(_("You did not approve “%(tool)s”, so it did not run and nothing changed.") % {"tool": r.tool_title(name)})
        elif res.get("is_error"):
            parts.append(_("“%(tool)s” failed: %(error)s") % {"tool": r.tool_title(name), "error": first[:300]})
        else:
            more = " " + _("The card above has the details.") if len(text.strip().splitlines()) > 1 else ""
            said = first[:300].rstrip(":")
            cited = SOURCE_LINE.findall(text)[:CITED_MAX]  # a search of sources: name what it found, citing each
            if cited:
                said += ": " + "; ".join(f"{title.strip()[:120]} {marker}" for marker, title in cited)
            parts.append(f"{said}{'' if said.endswith(('.', '!', '?')) else '.'}{more}")
    return Reply(" ".join(parts), _next_tool(r))


# a message's clauses: "What is 6*7? And what time is it?" asks two things
_CLAUSE = re.compile(r"\?+\s*|;\s*|\.\s+|,?\s+\band\s+(?:then\s+|also\s+)?", re.I)


def _clause_reading(r: Reading, clause: str) -> Reading:
    """The request read as if the user had said only `clause` (its words, its subject)."""
    part = Reading(r.request)
    part.__dict__["user_text"] = clause.strip()  # a cached_property: the words, tokens and subject follow from it
    return part


def _called_this_turn(r: Reading) -> set[str]:
    """The tools the model called since the user's last typed message."""
    called: set[str] = set()
    for msg in reversed(r.request.messages):
        if msg.get("role") == "user" and message_text(msg).strip():
            break
        if msg.get("role") == "assistant":
            called |= {str(b.get("name")) for b in msg.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_use"}
    return called


def _next_tool(r: Reading) -> tuple[str, dict[str, Any]] | None:
    """A further tool the user asked for in a clause of its own, not called yet this turn ("What is 17*23? And what
    time is it?": calculate, then the time), as a model calls one tool after another; None when there is none."""
    if r.request.tool_choice == "none":
        return None
    called = _called_this_turn(r)
    for clause in _CLAUSE.split(r.user_text):
        if not clause.strip():
            continue
        part = _clause_reading(r, clause)
        tool, score = _best_tool(part)  # the clause's own best tool: one already called means the clause was about it
        if tool is None or tool["name"] in called or score < 2:
            continue
        named = part.user_words & words(tool["name"]) or _title_said(r, tool["name"], clause)
        if not named and tool["name"] != "calculate":  # named, not guessed from its description
            continue
        tool_input, missing = tool_input_build(part, tool)
        if not missing:
            return tool["name"], tool_input
    return None



def _best_tool(r: Reading) -> tuple[dict[str, Any] | None, int]:
    scored = []
    said = r.user_words
    for tool in r.tools:
        if tool["name"] == "get_payload" and not re.search(r"\b[0-9a-f]{8}\b", r.user_text):
            continue
        own = words(tool["name"])
        name_hits = len(said & own)
        # every word of a name of several ("rename the stream"), or its title as the welcome's starters and this model's
        # chips say it ("Search articles about CRISPR"): that tool is meant
        if (len(own) > 1 and own <= said) or _title_said(r, tool["name"], r.user_text) or _name_said(r, tool["name"]):
            name_hits += 4
        desc_hits = len(said & words(tool.get("description", "").split(".")[0]))
        if tool["name"] == "calculate" and re.search(r"\d\s*[-+*/%^]\s*\d", r.user_text):
            name_hits += 2
        required = tool.get("input_schema", {}).get("required", [])
        if any(x.endswith("id") for x in required) and re.search(r"\b\d{5,}\b", r.user_text):
            name_hits += 2
        if name_hits or desc_hits >= 2:
            scored.append((2 * name_hits + desc_hits, tool))
    if not scored:
        return None, 0
    scored.sort(key=lambda s: -s[0])
    return scored[0][1], scored[0][0]


def _name_said(r: Reading, name: str) -> bool:
    """Every part of a name of several is among the user's words, a page's word too ("Switch to the presentation tab"
    names switch_tab: `words` leaves "tab" out as a word about the page)."""
    parts = {norm(p) for p in re.split(r"[_-]", name) if len(p) > 2}
    return len(parts) > 1 and parts <= {norm(t) for t in tokens(r.user_text)}


def _title_said(r: Reading, name: str, text: str) -> bool:
    """The tool's title (of two words or more) is in `text`, whatever the case: "Search articles about CRISPR"; or the
    message as written is its title, of any length (this model's chip for the tool in another language: "Rechner")."""
    title = r.tool_title(name).casefold()
    if title and " ".join(r.written_text.split()).casefold() == " ".join(title.split()):
        return True
    return " " in title and re.search(rf"(?<!\w){re.escape(title)}(?!\w)", text.casefold()) is not None


ACT_WORDS = frozenset("find search look show get list open preview run calculate compute fetch check count switch highlight fill".split())


def match_tool(r: Reading) -> float:
    if r.request.tool_choice == "none":
        return 0
    tool, score = _best_tool(r)
    return 50 + score + 10 * bool(set(tokens(r.user_text)) & ACT_WORDS) if tool is not None else 0


def use_tool(r: Reading) -> Reply:
    """Call the tool the user's words name, its input filled from their subject (or the page's)."""
    tool, _score = _best_tool(r)
    assert tool is not None
    tool_input, missing = tool_input_build(r, tool)
    if missing:
        title = r.tool_title(tool["name"])
        wanted = _missing_text(tool, tool_input)
        choices = [str(v) for v in tool.get("input_schema", {}).get("properties", {}).get(wanted, {}).get("enum", [])]
        if choices:  # a choice: offered as chips
            return Reply(join(_("Which %(what)s should “%(tool)s” use?") % {"tool": title, "what": field_words(wanted)}, values_line(
                [{"label": choice_label(c), "value": f"{title}: {choice_label(c)}"} for c in choices][:8])))
        if wanted not in SEARCH_TEXTS:  # a value to write, not a subject to look for: ask for it by its name
            return Reply(_("What should “%(tool)s” use as %(what)s?") % {"tool": title, "what": field_words(wanted)})
        return Reply(join(_("What should I look for with “%(tool)s”?") % {"tool": title}, values_line(
            [{"label": t, "value": f"{title} {t}"} for t in _page_topics(r)][:4])))
    return Reply(_("Let me use “%(tool)s” for that.") % {"tool": r.tool_title(tool["name"])}, (tool["name"], tool_input))


def _page_topics(r: Reading) -> list[str]:
    out: list[str] = []
    for key, value in r.facts:
        if norm(key.lower()) in ("topic", "keyword", "entity"):
            out += [v.strip() for v in re.split(r"[,;]", value) if v.strip()]
    return out


SEARCH_TEXTS = frozenset({"query", "q", "search", "topic", "keywords", "term", "terms", "url", "expression"})


def _missing_text(tool: dict[str, Any], tool_input: dict[str, Any]) -> str:
    """The first required text input left empty."""
    schema = tool.get("input_schema", {})
    return next((name for name in schema.get("required", []) if tool_input.get(name) == ""), "query")


IDENTIFIER = re.compile(r"(id|(^|_)(number|num|no|code|ref|reference|key|sku))$", re.I)


def tool_input_build(r: Reading, tool: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The tool's input from the user's words: ids and numbers found, a query of their subject words only
    (never filler, never the tool's own vocabulary); on an entity's page without a subject, the entity's keywords.
    Returns (input, a required text is missing)."""
    schema = tool.get("input_schema", {})
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    own = words(tool["name"]) | words(tool.get("description", ""))
    numbers = re.findall(r"\b\d+\b", r.user_text)
    out: dict[str, Any] = {}
    missing = False
    for name, prop in props.items():  # the choices first: the words that named one are not part of a text's value
        if "enum" in prop:
            said = choice_said([str(v) for v in prop["enum"]], r.user_text)
            if said is None and name in required and len(prop["enum"]) > 1 and "default" not in prop:
                out[name] = ""  # a required choice the words do not make: asked for, never guessed
                missing = True
                continue
            out[name] = said or prop.get("default", prop["enum"][0])
            own |= words(str(out[name])) | words(choice_label(str(out[name])))
    for name, prop in props.items():
        kind = prop.get("type") or next((t.get("type") for t in prop.get("anyOf", []) if t.get("type") != "null"), "string")
        if "enum" in prop:
            continue
        elif kind == "string":
            if name == "expression":
                m = re.search(r"[-+*/%().\d\s^]{3,}", r.user_text)
                out[name] = (m.group(0).strip() if m else "0").replace("^", "**")
            elif IDENTIFIER.search(name):  # order_number, invoice_no, stream_id: the id-like token the user wrote
                m = re.search(r"\b([A-Za-z]*\d[\w-]*|[0-9a-f]{8})\b", r.user_text)
                if m or name in required:
                    out[name] = m.group(1) if m else ""
            elif name in required or not out:
                subject = " ".join(w for w in subject_words(r.user_text, exclude=own) if w.lower() not in STOPWORDS)
                if not subject:
                    subject = " ".join(_page_topics(r)[:3])
                if not subject and name in required:
                    missing = True
                out[name] = subject
        elif kind == "integer" and name in required:
            out[name] = int(numbers[0]) if numbers else int(prop.get("default", 5))
        elif kind == "integer" and numbers and name in ("limit", "max_results", "count"):
            out[name] = min(int(numbers[0]), int(prop.get("maximum", 50)))
    return out, missing
