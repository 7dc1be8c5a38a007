"""The offline model's intents: each scores a request (0 = not this one) and handles it; chosen by the highest score,
ties by registration order, handled by name. Deterministic: the same request always gets the same reply."""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _, gettext_noop, ngettext

from chat.infra.registration import title_shown
from chat.providers.offline.languages import glossary
from chat.providers.offline.reading import (
    PAGE_WORDS,
    REQUEST_CONTEXT,
    STOPWORDS,
    PayloadOffer,
    Reading,
    data_body,
    message_text,
    norm,
    subject_words,
    tokens,
    words,
)


@dataclass(frozen=True)
class Reply:
    """What the model says; `tool` is a call to make (name, input); `intent` names the handler (diagnostics)."""

    text: str
    tool: tuple[str, dict[str, Any]] | None = None
    intent: str = ""


Matcher = Callable[[Reading], float]
Handler = Callable[[Reading], Reply]


@dataclass(frozen=True)
class Intent:
    name: str
    match: Matcher
    handle: Handler
    description: str = ""


class IntentRegistry:
    """Intents by name; `choose` scores them all, `reply` runs the chosen one's handler."""

    def __init__(self) -> None:
        self._intents: dict[str, Intent] = {}

    def register(self, name: str, match: Matcher, *, description: str = "") -> Callable[[Handler], Handler]:
        """Decorator: register the handler under `name` with its matcher (a later registration replaces it)."""
        def deco(handle: Handler) -> Handler:
            self._intents[name] = Intent(name, match, handle, description or (handle.__doc__ or "").strip())
            return handle
        return deco

    def unregister(self, name: str) -> None:
        self._intents.pop(name, None)

    def names(self) -> list[str]:
        return list(self._intents)

    def choose(self, reading: Reading) -> str:
        """The name of the best-scoring intent ("help" when nothing scores)."""
        best, best_score = "help", 0.0
        for intent in self._intents.values():
            score = float(intent.match(reading))
            if score > best_score:
                best, best_score = intent.name, score
        return best

    def reply(self, reading: Reading) -> Reply:
        name = self.choose(reading)
        reply = self._intents[name].handle(reading)
        return Reply(reply.text, reply.tool, name)


intents = IntentRegistry()
intent = intents.register

# ---- helpers -------------------------------------------------------------------------------------------------


def values_line(values: list[dict[str, Any]]) -> str:
    return "SUGGESTED_VALUES: " + json.dumps(values, ensure_ascii=False) if values else ""


def actions_line(actions: list[dict[str, Any]]) -> str:
    return "SUGGESTED_ACTIONS: " + json.dumps(actions, ensure_ascii=False) if actions else ""


ASK_NAME = gettext_noop("What would you like to name the %(thing)s?")
TYPE_NAME = gettext_noop("Type the name you'd like for the %(thing)s and send it.")
ASK_VALUE = gettext_noop("What would you like the %(field)s to be?")


def _said(phrase: str, text: str, **groups: str) -> re.Match[str] | None:
    """Where this model said `phrase` (a msgid with `%(name)s` placeholders, matched by `groups`' patterns) in `text`,
    in English or in the turn's language: it reads its own earlier questions in whichever it wrote them."""
    for variant in dict.fromkeys([phrase, _(phrase)]):
        pattern = re.escape(variant)
        for name, group in groups.items():
            pattern = pattern.replace(re.escape(f"%({name})s"), f"(?P<{name}>{group})")
        m = re.search(pattern, text)
        if m:
            return m
    return None


def join(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def label(name: str) -> str:
    return name.replace("_", " ")


def in_sentence(title: str) -> str:
    """A title inside a sentence ("Propose stream ideas"): its first letter in lower case, except in German (its nouns
    are capitalised) and for a word in capitals ("AI column suggestion")."""
    language = translation.get_language() or ""
    if language.split("-")[0] == "de" or title[1:2].isupper():
        return title
    return title[:1].lower() + title[1:]


def speaks_english() -> bool:
    """The turn's language is English (or none): descriptions, written for a model in English, may be quoted."""
    language = translation.get_language()
    return not language or language.split("-")[0] == "en"


def shown_values(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chips a page's instructions give (`SUGGESTED_VALUES` in English, for a model) in the turn's language where the
    catalogs translate them (the demo marks its chips' labels and values): the label, and the words the chip sends,
    which this model then reads through its glossary as it reads a typed message."""
    return [{**v, **{k: _(v[k]) for k in ("label", "value") if isinstance(v.get(k), str) and v[k]}} for v in values]


def choice_label(value: str) -> str:
    """An enumerated value as people read it ("weekly" -> "Weekly", German "Wöchentlich"): its capitalised form
    through the catalogs (a page's model choices translate it), the value itself where none does."""
    return _(value[:1].upper() + value[1:]) if value else value


def choice_said(allowed: list[str], text: str) -> str | None:
    """The enumerated value `text` names, by its value or its label in the turn's language, the longest first
    ("biweekly" is not "weekly"); None when it names none."""
    low = text.casefold()
    for value in sorted(allowed, key=len, reverse=True):
        if re.search(rf"(?<!\w){re.escape(value.casefold())}(?!\w)", low) or re.search(
                rf"(?<!\w){re.escape(choice_label(value).casefold())}(?!\w)", low):
            return value
    return None


def field_words(key: str) -> str:
    """A payload field inside a sentence ("report frequency", German "Berichtshäufigkeit"): its derived title in the
    turn's language (the catalogs may translate it)."""
    return in_sentence(title_shown("", key) or label(key))


def entity_topic(reading: Reading) -> str:
    """The subject of what is on screen: the page's first topic or keyword, else its entity's name."""
    for key, value in reading.facts:
        if norm(key.lower()) in ("topic", "keyword"):
            return value.split(",")[0].split(";")[0].strip()
    for key, value in reading.facts:
        if key.lower() in ("stream", "article", "report", "entity", "name", "title"):
            return re.sub(r"\s*\(.*$", "", value).strip()
    return ""


def payload_topic(data: Any) -> str:
    """The subject a payload is about: the first of its topics or keywords, else the first word of its name."""
    stack = [data]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            for key, value in node.items():
                if norm(key) in ("topic", "keyword") and isinstance(value, list) and value and isinstance(value[0], str):
                    return value[0]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    name = name_field(data)
    return str(data.get(name, "")).split(" ")[0] if name and isinstance(data, dict) else ""


def name_field(data: Any) -> str | None:
    """The key that names a payload (`stream_name`, `name`, `title`), if it has one."""
    if not isinstance(data, dict):
        return None
    for key in data:
        if key == "name" or key.endswith("_name") or key == "title":
            return key
    return None


def localized(offer: PayloadOffer) -> Any:
    """The type's example with its texts in the turn's language where the catalogs translate them (a page marks its
    example's words, "Monitor {topic}: new findings"), as a model writes a proposal in the user's language; the
    values of an enumerated property ("weekly") stay the values."""
    def walk(node: Any, key: str | None) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, key) for v in node]
        if isinstance(node, str) and node and not (key and offer.enum(key)):
            return _(node)
        return node

    return walk(offer.example, None)


def fill(example: Any, topic: str) -> Any:
    """The example payload with `{topic}` / `{Topic}` placeholders filled with the subject."""
    raw = json.dumps(example, ensure_ascii=False)
    t = topic.replace('"', "").replace("\\", "")
    raw = raw.replace("{topic}", t).replace("{Topic}", titled(t))
    return json.loads(raw)


def titled(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def proposal(reading: Reading, offer: PayloadOffer, data: Any, lead: str) -> Reply:
    """A payload with its refinement chips (from the type's instructions), the matching server action and Cancel."""
    actions = [
        {"label": _action_label(a.name, offer), "action": a.name, "handler": "server", "data": data, "style": "primary"}
        for a in reading.actions
        # the action's description (not its name) must speak of this payload; a delete is never offered with one
        if a.handler == "server" and not a.name.startswith("delete")
        and words(offer.type + " " + offer.description) & (words(a.description) - words(a.name))
    ][:2]
    if any(a.name == "cancel" for a in reading.actions):
        actions.append({"label": _("Cancel"), "action": "cancel", "handler": "client", "style": "secondary"})
    return Reply(join(lead, f"{offer.marker} {json.dumps(data, ensure_ascii=False)}",
                      values_line(shown_values(offer.values_after("with the form"))), actions_line(actions)))


def _action_label(name: str, offer: PayloadOffer) -> str:
    # the action's name as people read it, through the catalogs (the demo translates "Create stream")
    if name.startswith("create_"):  # inside the sentence: "Accepter et créer le flux" (English keeps "Accept & Create stream")
        return _("Accept & %(action)s") % {"action": title_shown("", name) if speaks_english() else in_sentence(title_shown("", name))}
    return title_shown("", name)


def _type_named(reading: Reading, offer: PayloadOffer) -> int:
    """How many words of the type's name the user said ("suggest" ~ "suggestions", "portfolio")."""
    type_words = [w for w in offer.type.split("_") if len(w) > 3]
    return sum(1 for w in type_words if any(t[:5] == w[:5] for t in tokens(reading.user_text) if len(t) > 3))


def _offer_hits(reading: Reading, offer: PayloadOffer) -> int:
    """Words shared with the offer's description, twice for words of its type's name; in another language than English
    its title as that language names it counts as its name (the words this model's chips for it send)."""
    hits = len(reading.user_words & offer.own_words()) + 2 * _type_named(reading, offer)
    return hits + 4 * (not speaks_english() and _said_whole(offer.shown, reading.written_text))


def _said_whole(title: str, text: str) -> bool:
    """`title` is in `text` as whole words, whatever the case ("Forschungsstrom-Vorschläge vorschlagen")."""
    title = " ".join(title.split()).casefold()
    return bool(title) and re.search(rf"(?<!\w){re.escape(title)}(?!\w)", " ".join(text.split()).casefold()) is not None


def offer_chip(offer: PayloadOffer, chip_label: str | None = None) -> dict[str, str]:
    """A chip asking for a proposal of `offer`: labelled "Suggest <its title>" (or `chip_label`), sending "propose <type>"
    in English, in another language its label's words (the type's title in them is read back: `_offer_hits`)."""
    asks = _("Suggest %(type)s") % {"type": in_sentence(offer.shown)}
    return {"label": chip_label or asks, "value": f"propose {label(offer.type)}" if speaks_english() else asks}


def tool_chip(r: Reading, tool: dict[str, Any]) -> dict[str, str]:
    """A chip for a tool: labelled by its title, sending its description's first sentence in English, in another
    language its title (descriptions are English, for a model; the title is read back: `_title_said`)."""
    title = r.tool_title(tool["name"])
    return {"label": title, "value": tool.get("description", tool["name"]).split(".")[0] if speaks_english() else title}


def best_offer(reading: Reading) -> tuple[PayloadOffer | None, int, bool]:
    """The payload type the user's words name (offer, hits, tied with another)."""
    scored = sorted(((_offer_hits(reading, o), i, o) for i, o in enumerate(reading.payloads)),
                    key=lambda s: (-s[0], s[1]))
    if not scored or scored[0][0] == 0:
        return None, 0, False
    tied = len(scored) > 1 and scored[1][0] == scored[0][0]
    return scored[0][2], scored[0][0], tied


# ---- intents, highest priority first ---------------------------------------------------------------------------


# a result line of a source search (tools.sources): "[[source:N]] [optional id] Title — snippet"
SOURCE_LINE = re.compile(r"^(\[\[source:\d+\]\]) (?:\[[^\]]*\] )?(.+?)(?: — .*)?$", re.M)
CITED_MAX = 3
# how the agent loop tells a model that the user denied a tool call (agent.loop), read as a model would read it
DECLINED = re.compile(r"\bdid not approve\b", re.I)


@intent("tool_results", lambda r: 100 if r.tool_results else 0)
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


ERROR_ADVICE: list[tuple[str, str]] = [
    (r"permission|forbidden|403|denied|unauthori[sz]ed|401", gettext_noop(
        "You may not have access to this: check that you are signed in with the right account, or ask an administrator for the permission.")),
    (r"not.?found|404|missing|does not exist", gettext_noop(
        "Something it refers to no longer exists: reload the page and check that the item was not deleted or renamed.")),
    (r"valid|invalid|required|format|422|400", gettext_noop(
        "Some input was not accepted: check the fields named in the error, fix the value and submit again.")),
    (r"time.?out|timed out|504|network|connection|offline|unreachable", gettext_noop(
        "The server did not answer in time: check your connection and try again in a moment.")),
    (r"rate|429|too many|limit", gettext_noop("You hit a limit: wait a minute before trying again.")),
    (r"conflict|409|duplicate|already exists|unique", gettext_noop(
        "It clashes with something that already exists: choose another name or open the existing item.")),
    (r"500|internal|server error|unexpected", gettext_noop(
        "The server failed unexpectedly: try again; if it keeps happening, report it with the error code.")),
]


@intent("troubleshoot", lambda r: 80 if r.troubleshooting is not None and not r.tool_results else 0)
def troubleshoot(r: Reading) -> Reply:
    """Explain the error the page reported and what to do about it."""
    err = r.troubleshooting
    assert err is not None
    seen = f"{err.message} {err.code} {err.context}".lower()
    advice = [_(text) for pattern, text in ERROR_ADVICE if re.search(pattern, seen)][:2] or [
        _("Try the step again; if it fails the same way, note what you did just before and the error code.")]
    message = err.message or _("no message")
    if err.code not in ("", "(none)"):
        head = _("You ran into an error (code `%(code)s`): **%(message)s**.") % {"code": err.code, "message": message}
    else:
        head = _("You ran into an error: **%(message)s**.") % {"message": message}
    lines = [head, "", _("What you can try:")]
    lines += [f"{i}. {text}" for i, text in enumerate(advice, 1)]
    if err.context not in ("", "{}", "(none)"):
        lines += ["", _("Details the page sent: `%(details)s`") % {"details": err.context[:300]}]
    # chips in the user's language, the words they send too (the page's error keeps the next turn on it, whatever they say)
    return Reply(join("\n".join(lines), values_line([
        {"label": _("Explain the error"), "value": _("What does this error mean?")},
        {"label": _("How do I fix it?"), "value": _("How do I fix this error?")},
    ])))


def _pending_field(r: Reading) -> str | None:
    """The payload field the assistant asked a value for in its last message, if it did."""
    prev = r.previous_assistant_text
    last = r.last_payload()
    if not prev or last is None or not isinstance(last[1], dict):
        return None
    if _said(ASK_NAME, prev, thing=r"[\w' -]+") or _said(TYPE_NAME, prev, thing=r"[\w' -]+"):
        return name_field(last[1])
    for key in last[1]:  # the field named in English or in the turn's language
        if _said(ASK_VALUE, prev, field="|".join(re.escape(w) for w in dict.fromkeys([label(key), field_words(key)]))):
            return str(key)
    return None


def _match_field_answer(r: Reading) -> float:
    if r.asks_change or r.is_question or _pending_field(r) is None:
        return 0
    return 0 if re.search(r"\btype (it|the \w+)\b", r.user_text, re.I) else 85


@intent("field_answer", _match_field_answer)
def field_answer(r: Reading) -> Reply:
    """The user gave the value asked for: the same payload with that field changed."""
    field_key = _pending_field(r)
    last = r.last_payload()
    assert field_key is not None and last is not None
    offer, data = last
    data = copy.deepcopy(data)
    value = r.written_text.strip().strip("\"'“”").strip()[:200]  # a name as the user wrote it
    allowed = offer.enum(field_key)
    if allowed:
        value = choice_said(allowed, r.user_text) or choice_said(allowed, r.written_text) or allowed[0]
    data[field_key] = value
    return proposal(r, offer, data, _("Done: the %(field)s is now **%(value)s**. Review the updated %(type)s below.")
                    % {"field": field_words(field_key), "value": choice_label(value) if allowed else value, "type": in_sentence(offer.shown)})


@intent("type_it", lambda r: 88 if _pending_field(r) and re.search(r"\btype (it|the \w+)\b", r.user_text, re.I) else 0)
def type_it(r: Reading) -> Reply:
    """The user wants to type the value themselves."""
    field_key = _pending_field(r) or "name"
    if name_field((r.last_payload() or (None, {}))[1]) == field_key:
        return Reply(_("Sure.") + " " + _(TYPE_NAME) % {"thing": _thing(field_key)})
    return Reply(_("Sure.") + " " + _(ASK_VALUE) % {"field": field_words(field_key)} + " " + _("Type it and send it."))


def _type_it(english: str) -> str:
    """What the "Let me type it" chip sends: `english`, or in another language its words for it (read back as "type it")."""
    return english if speaks_english() else _("I'll type it myself")


def _thing(field_key: str) -> str:
    """What a name field names, in a sentence of the turn's language ("stream_name" -> "stream", German "Strom")."""
    return field_words(field_key.removesuffix("_name").removesuffix("name").strip("_") or "item")


def _field_named(r: Reading, data: Any) -> str | None:
    """The payload field the user's words name ("change the name", "a different frequency")."""
    if not isinstance(data, dict):
        return None
    said = r.user_words | {norm(t) for t in tokens(r.user_text)}
    for key in data:
        parts = {norm(p) for p in key.split("_")}
        if key == name_field(data) and ("name" in said or "rename" in said or "title" in said):
            return key
        if parts & said - {"stream", "report", "research"} and not isinstance(data[key], list):
            return key
    return None


# names it suggests for a proposal, in the turn's language
NAME_IDEAS = (gettext_noop("%(topic)s Research Monitor"), gettext_noop("%(topic)s Intelligence"), gettext_noop("%(topic)s Watch"),
              gettext_noop("%(topic)s Insights"))


def _match_refine(r: Reading) -> float:
    last = r.last_payload()
    if last is None or not (r.asks_change or {"different", "another", "other"} & set(tokens(r.user_text))):
        return 0
    return 75 if _field_named(r, last[1]) else 0


@intent("refine_field", _match_refine)
def refine_field(r: Reading) -> Reply:
    """Change one field of the last proposal: ask for the new value with suggestions, not the whole form again."""
    last = r.last_payload()
    assert last is not None
    offer, data = last
    key = _field_named(r, data)
    assert key is not None
    if key == name_field(data):
        topic = titled(payload_topic(data) or entity_topic(r) or "Research")
        ideas = [n for n in (_(idea) % {"topic": topic} for idea in NAME_IDEAS) if n.lower() != str(data.get(key, "")).lower()][:2]
        values = [{"label": n, "value": n} for n in ideas] + [{"label": _("Let me type it"), "value": _type_it("I'll type the name")}]
        return Reply(join(_(ASK_NAME) % {"thing": _thing(key)}, values_line(values)))
    allowed = offer.enum(key)
    current = str(data.get(key, ""))
    if allowed:  # the values as the catalogs name them (the demo's choices: "Wöchentlich"); the chip sends the value
        values = [{"label": choice_label(a), "value": a} for a in allowed if a != current]
    else:
        values = [{"label": _("Let me type it"), "value": _type_it(f"I'll type the {label(key)}")}]
    now = " " + _("(now %(value)s)") % {"value": choice_label(current).lower() if allowed else current} if current else ""
    return Reply(join(_(ASK_VALUE) % {"field": field_words(key)} + now, values_line(values)))


def _list_named(r: Reading, data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    said = {norm(t) for t in tokens(r.user_text)}
    return next((k for k, v in data.items() if isinstance(v, list) and norm(k) in said), None)


def _match_extend(r: Reading) -> float:
    last = r.last_payload()
    if last is None or not ({"add", "more", "extra", "another"} & set(tokens(r.user_text))):
        return 0
    return 76 if _list_named(r, last[1]) else 0


@intent("extend_list", _match_extend)
def extend_list(r: Reading) -> Reply:
    """Add items to a list of the last proposal ("add more channels"), varying each item's kind."""
    last = r.last_payload()
    assert last is not None
    offer, data = last
    data = copy.deepcopy(data)
    key = _list_named(r, data)
    assert key is not None
    items: list[Any] = data[key]
    topic = payload_topic(data) or entity_topic(r) or "research"
    added: list[Any] = []
    template = items[-1] if items else None
    if isinstance(template, dict):
        kinds = {k: offer.enum(k) for k in template if offer.enum(k)}
        for _round in range(2):
            item = copy.deepcopy(template)
            for k, allowed in kinds.items():
                used = {str(i.get(k)) for i in [*items, *added] if isinstance(i, dict)}
                fresh = [a for a in allowed if a not in used]
                if not fresh:
                    break
                item[k] = fresh[0]
                kind = fresh[0]
                if "name" in item:
                    item["name"] = f"{titled(topic)} {choice_label(kind)}"
                for lk, lv in item.items():
                    if isinstance(lv, list) and all(isinstance(x, str) for x in lv):
                        item[lk] = [topic, kind]
            else:
                added.append(item)
                continue
            break
    if not added:
        return Reply(join(_("The %(list)s already cover every kind I know. Tell me what to add and I'll put it in.") % {"list": field_words(key)},
                          values_line(shown_values(offer.values_after("with the form")))))
    items.extend(added)
    names = ", ".join(f"**{i.get('name', '?')}**" if isinstance(i, dict) else str(i) for i in added)
    return proposal(r, offer, data, ngettext("Added %(count)d %(list)s: %(names)s. Review the updated %(type)s below.",
                                             "Added %(count)d %(list)s: %(names)s. Review the updated %(type)s below.", len(added))
                    % {"count": len(added), "list": field_words(key), "names": names, "type": in_sentence(offer.shown)})


def _action_offer(r: Reading) -> tuple[Any, dict[str, Any]] | None:
    """A server action the user names by its verb ("delete this stream" -> delete_entity) whose data the request
    context fills completely (the action, its data); None otherwise."""
    said = set(tokens(r.user_text))
    context = REQUEST_CONTEXT.search(r.sections.get("CONTEXT", ""))
    for a in r.actions:
        if a.handler != "server" or not a.params or a.name.split("_")[0] not in said:
            continue
        data: dict[str, Any] = {}
        for param in a.params:
            m = re.search(rf'"{re.escape(param)}": ("(?:[^"\\]|\\.)*"|-?\d+)', context.group(1) if context else "")
            if m is None:
                break
            data[param] = json.loads(m.group(1))
        else:
            return a, data
    return None


@intent("offer_action", lambda r: 72 if not r.tool_results and _action_offer(r) is not None else 0)
def offer_action(r: Reading) -> Reply:
    """Offer the server action the user named as a button (never run: the user clicks it)."""
    found = _action_offer(r)
    assert found is not None
    a, data = found
    button = {"label": title_shown("", a.name), "action": a.name, "handler": "server", "data": data, "style": "warning"}
    cancel = {"label": _("Cancel"), "action": "close", "handler": "client", "style": "secondary"}
    return Reply(join(_("I can do that here: %(action)s. Use the button below when you are sure.") % {"action": _lower_first(a.description)},
                      actions_line([button, cancel])))


AREA_QUESTION = gettext_noop("Which area should it focus on?")


def _match_area_answer(r: Reading) -> float:
    return 84 if _said(AREA_QUESTION, r.previous_assistant_text) and not r.is_question and _asked_offer(r) else 0


def _asked_offer(r: Reading) -> PayloadOffer | None:
    # named by its title (or, in a conversation from before titles, by its type in words)
    said = r.previous_assistant_text
    return next((o for o in r.payloads if f"**{in_sentence(o.shown)}**" in said or f"**{label(o.type)}**" in said), None)


@intent("area_answer", _match_area_answer)
def area_answer(r: Reading) -> Reply:
    """The user chose the area asked for: the proposal for it."""
    offer = _asked_offer(r)
    assert offer is not None
    topic = " ".join(subject_words(r.user_text, exclude=offer.own_words())) or r.user_text
    return proposal(r, offer, fill(localized(offer), topic[:60]),
                    _("Here is a %(type)s for **%(topic)s**. Review it below and tell me what to change.")
                    % {"type": in_sentence(offer.shown), "topic": topic[:60]})


def _match_propose(r: Reading) -> float:
    if not r.payloads:
        return 0
    offer, hits, tied = best_offer(r)
    if not r.asks_change:
        # no change verb: only a request that names the payload ("my portfolio insights"), never a question
        return 58 + hits if offer is not None and not tied and not r.is_question and _type_named(r, offer) else 0
    if offer is not None and not tied:
        return 60 + hits
    # one payload on this page (or tab): a change request is about it
    return 55 if len(r.payloads) == 1 else 0


@intent("propose", _match_propose)
def propose(r: Reading) -> Reply:
    """Propose a payload: the user asked for a change and the page offers one; the subject is theirs or the page's."""
    offer, _hits, _tied = best_offer(r)
    offer = offer or r.payloads[0]
    named = offer.own_words() | {norm(w) for w in words(offer.type)}
    if not speaks_english() and _said_whole(offer.shown, r.written_text):  # its chip's words: its title names it, no subject
        named |= words(offer.shown) | words(glossary.gloss(offer.shown, r.language))
    subject = " ".join(subject_words(r.user_text, exclude=named))[:60]
    needs_topic = "{topic}" in json.dumps(offer.example).lower()
    topic = subject or entity_topic(r)
    if needs_topic and not topic:
        asks = offer.values_after("ask")
        if asks:
            lead = _("I'll prepare a **%(type)s** for you.") % {"type": in_sentence(offer.shown)} + " " + _(AREA_QUESTION)
            return Reply(join(lead, values_line(shown_values(asks))))
        return Reply(_("I'll prepare a **%(type)s** for you.") % {"type": in_sentence(offer.shown)} + " " + _(AREA_QUESTION) + " " + _("Tell me the subject."))
    if subject:
        lead = _("Proposed %(type)s for **%(topic)s**. Review it below; accept it to apply it.")
    else:
        lead = _("Proposed %(type)s for **%(topic)s** from what is on this page. Review it below; accept it to apply it.")
    return proposal(r, offer, fill(localized(offer), topic or "general"), lead % {"type": in_sentence(offer.shown), "topic": topic or _("general")})


def _match_clarify(r: Reading) -> float:
    if r.asks_change and len(r.payloads) > 1:
        offer, _hits, tied = best_offer(r)
        return 40 if offer is None or tied else 0
    return 0


@intent("clarify", _match_clarify)
def clarify(r: Reading) -> Reply:
    """A change request that could mean several things: ask which, with chips."""
    values = [offer_chip(o, o.shown) for o in r.payloads][:4]
    return Reply(join(_("I can prepare several things here. Which one do you mean?"), values_line(values)))


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
        if (len(own) > 1 and own <= said) or _title_said(r, tool["name"], r.user_text):
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


def _title_said(r: Reading, name: str, text: str) -> bool:
    """The tool's title (of two words or more) is in `text`, whatever the case: "Search articles about CRISPR"; or the
    message as written is its title, of any length (this model's chip for the tool in another language: "Rechner")."""
    title = r.tool_title(name).casefold()
    if title and " ".join(r.written_text.split()).casefold() == " ".join(title.split()):
        return True
    return " " in title and re.search(rf"(?<!\w){re.escape(title)}(?!\w)", text.casefold()) is not None


ACT_WORDS = frozenset("find search look show get list open preview run calculate compute fetch check count".split())


def _match_tool(r: Reading) -> float:
    if r.request.tool_choice == "none":
        return 0
    tool, score = _best_tool(r)
    return 50 + score + 10 * bool(set(tokens(r.user_text)) & ACT_WORDS) if tool is not None else 0


@intent("use_tool", _match_tool)
def use_tool(r: Reading) -> Reply:
    """Call the tool the user's words name, its input filled from their subject (or the page's)."""
    tool, _score = _best_tool(r)
    assert tool is not None
    tool_input, missing = tool_input_build(r, tool)
    if missing:
        title = r.tool_title(tool["name"])
        return Reply(join(_("What should I look for with “%(tool)s”?") % {"tool": title}, values_line(
            [{"label": t, "value": f"{title} {t}"} for t in _page_topics(r)][:4])))
    return Reply(_("Let me use “%(tool)s” for that.") % {"tool": r.tool_title(tool["name"])}, (tool["name"], tool_input))


def _page_topics(r: Reading) -> list[str]:
    out: list[str] = []
    for key, value in r.facts:
        if norm(key.lower()) in ("topic", "keyword", "entity"):
            out += [v.strip() for v in re.split(r"[,;]", value) if v.strip()]
    return out


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
    for name, prop in props.items():
        kind = prop.get("type") or next((t.get("type") for t in prop.get("anyOf", []) if t.get("type") != "null"), "string")
        if "enum" in prop:
            out[name] = choice_said([str(v) for v in prop["enum"]], r.user_text) or prop["enum"][0]
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


# Words that point at what is on screen ("this", "the tab"), and requests for its gist ("summarize", "overview"):
# a gist request points at the page only when it names nothing else ("explain quantum computing" does not).
POINTING_WORDS = frozenset("this it here".split()) | PAGE_WORDS
GIST_WORDS = frozenset("about summary summarize summarise describe explain overview".split())
SMALLTALK = re.compile(r"\b(hi|hello|hey|thanks|thank you|what can you do|can you do|who are you|help me\b(?! \w+ \w))", re.I)


def _match_answer(r: Reading) -> float:
    """A question about what is on screen: it points at the page ("this", "the tab") or names one of its facts."""
    if not r.facts or r.asks_change or SMALLTALK.search(r.user_text):
        return 0
    said = set(tokens(r.user_text))
    fact_words = _fact_words(r)
    names = bool(r.user_words & fact_words) or any(_asks_fact(r, k) for k, _ in r.facts)
    points = bool(said & POINTING_WORDS) or bool(said & GIST_WORDS and not r.user_words - fact_words - {norm(w) for w in GIST_WORDS})
    if (r.is_question or points) and (points or names):
        return 45 + 10 * names
    return 0


def _fact_words(r: Reading) -> set[str]:
    return words(" ".join(k for k, _ in r.facts)) | words(r.situation)


def _asks_fact(r: Reading, key: str) -> bool:
    """The user's words name the fact `key` ("what topics does it cover?" names `Topics`): every word of the key
    counts here, even one too common to be a subject ("topics", "papers")."""
    return bool({norm(w) for w in tokens(key) if len(w) > 2} & {norm(w) for w in tokens(r.user_text)})


@intent("answer_from_page", _match_answer)
def answer_from_page(r: Reading) -> Reply:
    """Answer a question about what is on screen from the page's context (the facts its context builder wrote)."""
    # facts the question names, beyond the first (the entity itself: "what is this stream about" wants the overview)
    asked = [(k, v) for k, v in r.facts[1:] if _asks_fact(r, k)]
    lines: list[str] = []
    first_key = r.facts[0][0] if r.facts else ""
    if sum(1 for k, _ in r.facts if k == first_key) > 1:
        # a list page ("Stream: A", its facts, "Stream: B", ...): no first entity; the facts asked about, of each entry
        keys = {k for k, _ in r.facts if _asks_fact(r, k)} or {first_key}
        text = "\n".join([f"- **{_(k)}:** {v[:400]}" for k, v in r.facts if k in keys][:24])
    elif asked:
        lines += [f"- **{_(k)}:** {v}" for k, v in asked[:6]]
        head = r.facts[0][1] if r.facts else ""
        text = (_("On **%(subject)s**:") % {"subject": head} + "\n" if head else "") + "\n".join(lines)
    elif r.facts:
        v0, rest = r.facts[0][1], r.facts[1:]
        lead = next((v for k, v in rest if norm(k.lower()) in ("purpose", "summary", "abstract", "description")), "")
        text = f"**{v0}**" + (f": {lead}" if lead else "")
        shown = [(k, v) for k, v in rest if v != lead][:5]
        if shown:
            text += "\n\n" + "\n".join(f"- **{_(k)}:** {v[:400]}" for k, v in shown)
    else:
        text = r.situation
    where = _where(r)
    if where:
        text += f"\n\n{where}"
    values = [offer_chip(o) for o in r.payloads][:2]
    return Reply(join(text, values_line(values)))


def _where(r: Reading) -> str:
    if r.active_tab:
        return _("You are on the **%(tab)s** tab.") % {"tab": r.tab_title}
    return ""


def _gist(description: str) -> str:
    """A tool description's gist in plain words: its first clause, without examples or markdown characters."""
    text = re.split(r"\.\s|\s\(|:\s| such as ", description.strip() + " ", maxsplit=1)[0]
    return re.sub(r"[*_`|#<>\[\]]", "", text).strip().rstrip(".")


def _lower_first(text: str) -> str:
    """"Preview a query" -> "preview a query"; acronyms ("EGFR ...") stay as they are."""
    return text if text[:2].isupper() else text[:1].lower() + text[1:]


# Free text that needs a language model: what is asked for is a piece of writing (or a translation), not something this
# page offers. Only the object counts ("write a poem"), so "write a stream purpose" or "draft a report" stay proposals.
WRITING = re.compile(
    r"\b(poems?|poetry|stor(y|ies)|essays?|e-?mails?|letters?|songs?|lyrics|jokes?|haikus?|limericks?|tweets?|speech|"
    r"code|functions?|scripts?|programs?|regex|blog|recipes?)\b", re.I)
TRANSLATE = re.compile(r"\btranslat(e|ion)\b", re.I)
# The whole message is a thank-you or a goodbye.
THANKS = re.compile(r"^\W*(thanks?( you)?( (so|very) much)?|thank you|thx|cheers|great,? thanks?)\W*$", re.I)
GOODBYE = re.compile(r"^\W*(bye|goodbye|good bye|see you( later)?|bye,? thanks?)\W*$", re.I)


def _match_free_text(r: Reading) -> float:
    if r.tool_results or r.troubleshooting is not None:
        return 0
    translate = TRANSLATE.search(r.user_text) is not None
    writing = r.asks_change and WRITING.search(r.user_text) is not None
    if not (translate or writing):
        return 0
    offer, _hits, _tied = best_offer(r)
    return 0 if offer is not None and _type_named(r, offer) else 65  # "write a research stream about poems" is a proposal


@intent("free_text", _match_free_text)
def free_text(r: Reading) -> Reply:
    """Writing or translating free text (code, a poem, an email): say honestly that it needs a language model."""
    text = _("That needs a language model: I don't write or translate free text such as code, stories or emails.") + " " + _abilities_sentence(r)
    values = _ability_values(r)
    return Reply(join(text, values_line(values)))  # the tray shows the chips under their own "Try one of these:"


@intent("thanks", lambda r: 35 if not r.tool_results and (THANKS.search(r.user_text) or GOODBYE.search(r.user_text)) else 0)
def thanks(r: Reading) -> Reply:
    """A thank-you or a goodbye: a short answer, not the list of what the page offers again."""
    if GOODBYE.search(r.user_text):
        return Reply(_("Goodbye! I'm here on every page when you need me."))
    return Reply(_("You're welcome! Ask me anything else about this page."))


def _abilities_sentence(r: Reading) -> str:
    """"I'm the offline model on the X page: ... Here I can a; b; c." (the page's tools, payloads and facts)."""
    # plain sentences (no list or code markup): the reply reads the same while it streams and once rendered
    if speaks_english():
        can = [_lower_first(_gist(t.get("description") or r.tool_title(t["name"]))) for t in r.tools if t["name"] != "get_payload"]
        can += [_("prepare %(thing)s") % {"thing": o.description or in_sentence(o.shown)} for o in r.payloads]
    else:  # descriptions are for a model, in English: the user's language names tools and payload types by their titles
        can = [_("use “%(tool)s”") % {"tool": r.tool_title(t["name"])} for t in r.tools if t["name"] != "get_payload"]
        can += [_("prepare %(thing)s") % {"thing": in_sentence(o.shown)} for o in r.payloads]
    can.append(_("answer questions about what is on screen") if r.facts else _("answer questions about this page"))
    if r.page_title:
        intro = _("I'm the offline model on the **%(page)s** page: I read what is on the page. Here I can %(abilities)s.")
    else:
        intro = _("I'm the offline model: I read what is on the page. Here I can %(abilities)s.")
    return intro % {"page": r.page_title, "abilities": "; ".join(can)}


def _ability_values(r: Reading) -> list[dict[str, Any]]:
    """Chips for what the page offers: two of its tools, two of its payload types, and a question about the page."""
    values = [tool_chip(r, t) for t in r.tools if t["name"] != "get_payload"][:2]
    values += [offer_chip(o) for o in r.payloads][:2]
    if r.facts:
        values.append({"label": _("What is this?"), "value": _("What is this about?")})
    return values[:4]


@intent("help", lambda r: 30 if SMALLTALK.search(r.user_text) and not r.tool_results else 1)
def help_(r: Reading) -> Reply:
    """Say what this page offers, with chips for it (greetings, filler, anything unmatched)."""
    if SMALLTALK.search(r.user_text):
        opening = _("Hello!")
    elif r.is_question:  # a question nothing here answers (general knowledge, the weather): say so, not "not sure"
        opening = _("I can't answer that from this page.")
    else:
        opening = _("I'm not sure what you would like me to do.")
    values = _ability_values(r)
    return Reply(join(opening + " " + _abilities_sentence(r), values_line(values)))
