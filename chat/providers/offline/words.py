"""The words of a message as the offline model reads them: tokens, a crude singular, content words without filler,
and the user's own subject (no stop-words, page words or request verbs)."""
from __future__ import annotations

import re

# Words that carry no subject: grammar, politeness, and the vocabulary of asking ("can you propose ...").
STOPWORDS = frozenset(
    """a an the and or but nor of for to in on at by with about from into onto me my mine i i'm im am you your yours we
    our ours us it it's its is are was were be been being can could would should will shall may might must please
    help want wanted need needs like let lets let's show give find get tell what which who whom whose how why when
    where some any this that these those do does did doing done more most new make create up out all there here as
    if so just also now then than them they their theirs his her hers him she he have has had not no yes ok okay
    focus focused based around regarding propose proposal suggest suggestion suggestions idea ideas hi hello hey
    thanks thank thx good great nice cool sure yeah yep one ones something anything thing things stuff bit lot very
    really quite maybe perhaps kind sort way ways use using used try trying able else other another own same such
    each every few many much only still too again ever even well back over under via per via look looking see
    seeing current currently already same know think go going put set sets okay alright fine better best worse
    similar related relevant latest recent newest topic topics paper papers""".split()
)
# Words about the page itself ("this tab", "the form"): on a page they point at what is on screen, never a subject.
PAGE_WORDS = frozenset(
    """page pages tab tabs screen here form forms field fields panel section button buttons view window site app
    chat tray assistant bot""".split()
)
# Verbs that ask for a change: only these make the model propose a payload.
CHANGE_WORDS = frozenset(
    """change changes update edit set rename add adding remove delete drop replace improve refine adjust modify tweak
    rewrite write draft generate prepare propose suggest recommend create make build start setup plan new fill
    expand extend broaden narrow tighten reorganize reorganise group categorize categorise analyze analyse assess
    evaluate""".split()
)
QUESTION_WORDS = frozenset("what which who why how when where is are does do did can could explain summarize summarise describe".split())
# a word: a letter, then letters, digits, apostrophes, hyphens (any script: "Ströme", "artículos" are words)
WORD = re.compile(r"[^\W\d_][\w'-]*")


def tokens(text: str) -> list[str]:
    """The words of `text` in order, lower-cased."""
    return [w.lower().strip("'") for w in WORD.findall(text)]


def norm(word: str) -> str:
    """A crude singular ('queries' -> 'query', 'channels' -> 'channel')."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str) -> set[str]:
    """Content words of `text`: normalised, no stop-words, no page words, no 1-2 letter tokens."""
    out = set()
    for w in tokens(text):
        for part in w.replace("-", "_").split("_"):
            if len(part) > 2 and part not in STOPWORDS and part not in PAGE_WORDS:
                out.add(norm(part))
    return out


def subject_words(text: str, *, exclude: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """The user's own subject, in their order and spelling: no stop-words, page words, change verbs or `exclude`d words."""
    kept: list[str] = []
    for raw in WORD.findall(text):
        low = raw.lower().strip("'")
        if len(low) < 3 or low in STOPWORDS or low in PAGE_WORDS or low in CHANGE_WORDS or low in QUESTION_WORDS:
            continue
        if norm(low) in exclude or low in exclude:
            continue
        if raw not in kept:
            kept.append(raw)
    return kept
