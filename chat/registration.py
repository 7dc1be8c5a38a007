"""What the registries of pages, tools and payload types share: where a registration came from, the record of
a second registration under a taken name (kept out of the registry, reported by a system check), and the title people
read in place of a registered name."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from django.utils.translation import gettext


@dataclass(frozen=True)
class Duplicate:
    """A second registration under a taken name, from `second`; the one from `first` stays registered."""

    name: str
    first: str
    second: str


def caller_origin(registry_file: str) -> str:
    """`file:line` of the first caller outside `registry_file` (a registry module's `__file__`): the registration site."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename in (registry_file, __file__):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


_WORD_BREAK = re.compile(r"[^0-9A-Za-z]+|(?<=[a-z0-9])(?=[A-Z])")


def title_from_name(name: str) -> str:
    """A name as people read it: "search_articles" -> "Search articles", "getWeather" -> "Get weather" (words in capitals
    stay so: "fetch_URL" -> "Fetch URL"); "" for a name without letters or digits."""
    parts = [p for p in _WORD_BREAK.split(name) if p]
    text = " ".join(p if p.isupper() and len(p) > 1 else p.lower() for p in parts)
    return text[:1].upper() + text[1:]


def title_shown(title: object, name: str) -> str:
    """The title to show in the active language: the registration's own (a lazy translation is translated now), else
    the name's derived one, through gettext so a project's catalog may translate it too."""
    text = str(title or "").strip()
    if text:
        return text
    derived = title_from_name(name)
    return gettext(derived) if derived else ""  # gettext("") is the catalog's header
