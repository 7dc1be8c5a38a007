"""Proposals and chips: the payload type the user's words name, a proposal of it with its chips and buttons, the
subject it is about (the user's, a payload's, the page's entity), and the chips that ask for a proposal or a tool."""
from __future__ import annotations

import json
import re
from typing import Any

from django.utils.translation import gettext as _

from chat.infra.registration import title_shown
from chat.providers.offline.offers import PayloadOffer
from chat.providers.offline.phrasing import actions_line, in_sentence, join, label, shown_values, speaks_english, values_line
from chat.providers.offline.reading import Reading
from chat.providers.offline.registry import Reply
from chat.providers.offline.vocabulary import vocabulary
from chat.providers.offline.words import norm, tokens, words


def entity_topic(reading: Reading) -> str:
    """The subject of what is on screen: the page's first topic or keyword, else its entity's name."""
    for key, value in reading.facts:
        if norm(key.lower()) in ("topic", "keyword"):
            return value.split(",")[0].split(";")[0].strip()
    for key, value in reading.facts:
        if key.lower() in vocabulary.entity_keys:
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
        {"label": action_label(a.name, offer), "action": a.name, "handler": "server", "data": data, "style": "primary"}
        for a in reading.actions
        # the action's description (not its name) must speak of this payload; a delete is never offered with one
        if a.handler == "server" and not a.name.startswith("delete")
        and words(offer.type + " " + offer.description) & (words(a.description) - words(a.name))
    ][:2]
    if any(a.name == "cancel" for a in reading.actions):
        actions.append({"label": _("Cancel"), "action": "cancel", "handler": "client", "style": "secondary"})
    return Reply(join(lead, f"{offer.marker} {json.dumps(data, ensure_ascii=False)}",
                      values_line(shown_values(offer.values_after("with the form"))), actions_line(actions)))


def action_label(name: str, offer: PayloadOffer) -> str:
    # the action's name as people read it, through the catalogs (the demo translates "Create stream")
    if name.startswith("create_"):  # inside the sentence: "Accepter et créer le flux" (English keeps "Accept & Create stream")
        return _("Accept & %(action)s") % {"action": title_shown("", name) if speaks_english() else in_sentence(title_shown("", name))}
    return title_shown("", name)


def type_named(reading: Reading, offer: PayloadOffer) -> int:
    """How many words of the type's name the user said ("suggest" ~ "suggestions", "portfolio")."""
    type_words = [w for w in offer.type.split("_") if len(w) > 3]
    return sum(1 for w in type_words if any(t[:5] == w[:5] for t in tokens(reading.user_text) if len(t) > 3))


def offer_hits(reading: Reading, offer: PayloadOffer) -> int:
    """Words shared with the offer's description, twice for words of its type's name; in another language than English
    its title as that language names it counts as its name (the words this model's chips for it send)."""
    hits = len(reading.user_words & offer.own_words()) + 2 * type_named(reading, offer)
    return hits + 4 * (not speaks_english() and said_whole(offer.shown, reading.written_text))


def said_whole(title: str, text: str) -> bool:
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
    scored = sorted(((offer_hits(reading, o), i, o) for i, o in enumerate(reading.payloads)),
                    key=lambda s: (-s[0], s[1]))
    if not scored or scored[0][0] == 0:
        return None, 0, False
    tied = len(scored) > 1 and scored[1][0] == scored[0][0]
    return scored[0][2], scored[0][0], tied
