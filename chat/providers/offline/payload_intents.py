"""The intents around proposals: propose a payload, ask which one or which area, take the answer to a question it
asked (a name, a value, an area), refine one field or extend a list of the last proposal, offer a server action."""
from __future__ import annotations

import copy
import json
import re
from typing import Any

from django.utils.translation import gettext as _, gettext_noop, ngettext

from chat.infra.registration import title_shown
from chat.providers.offline.languages import glossary
from chat.providers.offline.offers import PayloadOffer
from chat.providers.offline.phrasing import (
    ASK_NAME,
    ASK_VALUE,
    TYPE_NAME,
    actions_line,
    choice_label,
    choice_said,
    field_words,
    in_sentence,
    join,
    label,
    lower_first,
    said,
    shown_values,
    speaks_english,
    titled,
    values_line,
)
from chat.providers.offline.proposing import best_offer, entity_topic, fill, localized, name_field, offer_chip, payload_topic, proposal, said_whole, type_named
from chat.providers.offline.reading import Reading
from chat.providers.offline.registry import Reply
from chat.providers.offline.vocabulary import vocabulary
from chat.providers.offline.words import norm, subject_words, tokens, words


def _pending_field(r: Reading) -> str | None:
    """The payload field the assistant asked a value for in its last message, if it did."""
    prev = r.previous_assistant_text
    last = r.last_payload()
    if not prev or last is None or not isinstance(last[1], dict):
        return None
    if said(ASK_NAME, prev, thing=r"[\w' -]+") or said(TYPE_NAME, prev, thing=r"[\w' -]+"):
        return name_field(last[1])
    for key in last[1]:  # the field named in English or in the turn's language
        if said(ASK_VALUE, prev, field="|".join(re.escape(w) for w in dict.fromkeys([label(key), field_words(key)]))):
            return str(key)
    return None


def match_field_answer(r: Reading) -> float:
    if r.asks_change or r.is_question or _pending_field(r) is None:
        return 0
    return 0 if re.search(r"\btype (it|the \w+)\b", r.user_text, re.I) else 85


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


def match_type_it(r: Reading) -> float:
    return 88 if _pending_field(r) and re.search(r"\btype (it|the \w+)\b", r.user_text, re.I) else 0


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
        if parts & (said - vocabulary.general_words) and not isinstance(data[key], list):
            return key
    return None


# names it suggests for a proposal, in the turn's language
NAME_IDEAS = (gettext_noop("%(topic)s Research Monitor"), gettext_noop("%(topic)s Intelligence"), gettext_noop("%(topic)s Watch"),
              gettext_noop("%(topic)s Insights"))


def match_refine(r: Reading) -> float:
    last = r.last_payload()
    if last is None or not (r.asks_change or {"different", "another", "other"} & set(tokens(r.user_text))):
        return 0
    return 75 if _field_named(r, last[1]) else 0


def refine_field(r: Reading) -> Reply:
    """Change one field of the last proposal: ask for the new value with suggestions, not the whole form again."""
    last = r.last_payload()
    assert last is not None
    offer, data = last
    key = _field_named(r, data)
    assert key is not None
    if key == name_field(data):
        topic = titled(payload_topic(data) or entity_topic(r) or vocabulary.fallback_topic)
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


def match_extend(r: Reading) -> float:
    last = r.last_payload()
    if last is None or not ({"add", "more", "extra", "another"} & set(tokens(r.user_text))):
        return 0
    return 76 if _list_named(r, last[1]) else 0


def extend_list(r: Reading) -> Reply:
    """Add items to a list of the last proposal ("add more channels"), varying each item's kind."""
    last = r.last_payload()
    assert last is not None
    offer, data = last
    data = copy.deepcopy(data)
    key = _list_named(r, data)
    assert key is not None
    items: list[Any] = data[key]
    topic = payload_topic(data) or entity_topic(r) or vocabulary.fallback_topic
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
    for a in r.actions:
        if a.handler != "server" or not a.params or a.name.split("_")[0] not in said:
            continue
        data: dict[str, Any] = {}
        for param in a.params:
            value = context_value(r.request_context, param)
            if value is None:
                break
            data[param] = value
        else:
            return a, data
    return None


def context_value(node: Any, key: str) -> str | int | None:
    """The first text or whole-number value of `key` anywhere in the request context (depth first, in its order)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
                return v
            if (found := context_value(v, key)) is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            if (found := context_value(v, key)) is not None:
                return found
    return None


def match_offer_action(r: Reading) -> float:
    return 72 if not r.tool_results and _action_offer(r) is not None else 0


def offer_action(r: Reading) -> Reply:
    """Offer the server action the user named as a button (never run: the user clicks it)."""
    found = _action_offer(r)
    assert found is not None
    a, data = found
    button = {"label": title_shown("", a.name), "action": a.name, "handler": "server", "data": data, "style": "warning"}
    cancel = {"label": _("Cancel"), "action": "close", "handler": "client", "style": "secondary"}
    return Reply(join(_("I can do that here: %(action)s. Use the button below when you are sure.") % {"action": lower_first(a.description)},
                      actions_line([button, cancel])))


AREA_QUESTION = gettext_noop("Which area should it focus on?")


def match_area_answer(r: Reading) -> float:
    return 84 if said(AREA_QUESTION, r.previous_assistant_text) and not r.is_question and _asked_offer(r) else 0


def _asked_offer(r: Reading) -> PayloadOffer | None:
    # named by its title (or, in a conversation from before titles, by its type in words)
    said = r.previous_assistant_text
    return next((o for o in r.payloads if f"**{in_sentence(o.shown)}**" in said or f"**{label(o.type)}**" in said), None)


def area_answer(r: Reading) -> Reply:
    """The user chose the area asked for: the proposal for it."""
    offer = _asked_offer(r)
    assert offer is not None
    topic = " ".join(subject_words(r.user_text, exclude=offer.own_words())) or r.user_text
    return proposal(r, offer, fill(localized(offer), topic[:60]),
                    _("Here is a %(type)s for **%(topic)s**. Review it below and tell me what to change.")
                    % {"type": in_sentence(offer.shown), "topic": topic[:60]})


def match_propose(r: Reading) -> float:
    if not r.payloads:
        return 0
    offer, hits, tied = best_offer(r)
    if not r.asks_change:
        # no change verb: only a request that names the payload ("my portfolio insights"), never a question
        return 58 + hits if offer is not None and not tied and not r.is_question and type_named(r, offer) else 0
    if offer is not None and not tied:
        return 60 + hits
    # one payload on this page (or tab): a change request is about it
    return 55 if len(r.payloads) == 1 else 0


def propose(r: Reading) -> Reply:
    """Propose a payload: the user asked for a change and the page offers one; the subject is theirs or the page's."""
    offer, _hits, _tied = best_offer(r)
    offer = offer or r.payloads[0]
    named = offer.own_words() | {norm(w) for w in words(offer.type)}
    if not speaks_english() and said_whole(offer.shown, r.written_text):  # its chip's words: its title names it, no subject
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


def match_clarify(r: Reading) -> float:
    if r.asks_change and len(r.payloads) > 1:
        offer, _hits, tied = best_offer(r)
        return 40 if offer is None or tied else 0
    return 0


def clarify(r: Reading) -> Reply:
    """A change request that could mean several things: ask which, with chips."""
    values = [offer_chip(o, o.shown) for o in r.payloads][:4]
    return Reply(join(_("I can prepare several things here. Which one do you mean?"), values_line(values)))
