"""How the offline model words things: the chip and button lines, titles inside a sentence, enumerated values as
people read them, and finding its own earlier questions (in English or the turn's language) in what it said."""
from __future__ import annotations

import json
import re
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _, gettext_noop

from chat.infra.registration import title_shown


def values_line(values: list[dict[str, Any]]) -> str:
    return "SUGGESTED_VALUES: " + json.dumps(values, ensure_ascii=False) if values else ""


def actions_line(actions: list[dict[str, Any]]) -> str:
    return "SUGGESTED_ACTIONS: " + json.dumps(actions, ensure_ascii=False) if actions else ""


ASK_NAME = gettext_noop("What would you like to name the %(thing)s?")
TYPE_NAME = gettext_noop("Type the name you'd like for the %(thing)s and send it.")
ASK_VALUE = gettext_noop("What would you like the %(field)s to be?")


def said(phrase: str, text: str, **groups: str) -> re.Match[str] | None:
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



def titled(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())



def lower_first(text: str) -> str:
    """"Preview a query" -> "preview a query"; acronyms ("EGFR ...") stay as they are."""
    return text if text[:2].isupper() else text[:1].lower() + text[1:]
