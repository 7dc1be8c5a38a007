"""The user's language: what a client may name (a BCP 47 tag) and how the model is told it."""
from __future__ import annotations

import re

from django.utils.translation import get_language_info

# a BCP 47 tag as browsers and <html lang> write it ("de", "pt-BR", "zh-Hant-TW"); anything else is not a language
LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8}){0,3}$")


def language_normalize(value: object) -> str | None:
    """`value` as a lower-case language code with a hyphen ("pt-br"), or None when it is not a language tag."""
    if not isinstance(value, str) or not LANGUAGE_TAG.match(value):
        return None
    return value.replace("_", "-").lower()


def language_name(code: str) -> str:
    """The language's English name for the model ("German"); Django's name of its base language, else the code."""
    for candidate in (code, code.split("-")[0]):
        try:
            return str(get_language_info(candidate)["name"])
        except KeyError:
            continue
    return code
