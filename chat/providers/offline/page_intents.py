"""The intents about the page and the conversation: answer from what is on screen, explain an error the page
reported, say honestly what needs a language model, answer thanks, and say what this page offers (help)."""
from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _, gettext_noop

from chat.providers.offline.phrasing import in_sentence, join, lower_first, speaks_english, values_line
from chat.providers.offline.proposing import best_offer, offer_chip, tool_chip, type_named
from chat.providers.offline.reading import Reading
from chat.providers.offline.registry import Reply
from chat.providers.offline.words import PAGE_WORDS, norm, tokens, words

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


def match_troubleshoot(r: Reading) -> float:
    return 80 if r.troubleshooting is not None and not r.tool_results else 0


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



# Words that point at what is on screen ("this", "the tab"), and requests for its gist ("summarize", "overview"):
# a gist request points at the page only when it names nothing else ("explain quantum computing" does not).
POINTING_WORDS = frozenset("this it here".split()) | PAGE_WORDS
GIST_WORDS = frozenset("about summary summarize summarise describe explain overview".split())
SMALLTALK = re.compile(r"\b(hi|hello|hey|thanks|thank you|what can you do|can you do|who are you|help me\b(?! \w+ \w))", re.I)


def match_answer(r: Reading) -> float:
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



# Free text that needs a language model: what is asked for is a piece of writing (or a translation), not something this
# page offers. Only the object counts ("write a poem"), so "write a stream purpose" or "draft a report" stay proposals.
WRITING = re.compile(
    r"\b(poems?|poetry|stor(y|ies)|essays?|e-?mails?|letters?|songs?|lyrics|jokes?|haikus?|limericks?|tweets?|speech|"
    r"code|functions?|scripts?|programs?|regex|blog|recipes?)\b", re.I)
TRANSLATE = re.compile(r"\btranslat(e|ion)\b", re.I)
# The whole message is a thank-you or a goodbye.
THANKS = re.compile(r"^\W*(thanks?( you)?( (so|very) much)?|thank you|thx|cheers|great,? thanks?)\W*$", re.I)
GOODBYE = re.compile(r"^\W*(bye|goodbye|good bye|see you( later)?|bye,? thanks?)\W*$", re.I)


def match_free_text(r: Reading) -> float:
    if r.tool_results or r.troubleshooting is not None:
        return 0
    translate = TRANSLATE.search(r.user_text) is not None
    writing = r.asks_change and WRITING.search(r.user_text) is not None
    if not (translate or writing):
        return 0
    offer, _hits, _tied = best_offer(r)
    return 0 if offer is not None and type_named(r, offer) else 65  # "write a research stream about poems" is a proposal


def free_text(r: Reading) -> Reply:
    """Writing or translating free text (code, a poem, an email): say honestly that it needs a language model."""
    text = _("That needs a language model: I don't write or translate free text such as code, stories or emails.") + " " + _abilities_sentence(r)
    values = _ability_values(r)
    return Reply(join(text, values_line(values)))  # the tray shows the chips under their own "Try one of these:"


def match_thanks(r: Reading) -> float:
    return 35 if not r.tool_results and (THANKS.search(r.user_text) or GOODBYE.search(r.user_text)) else 0


def thanks(r: Reading) -> Reply:
    """A thank-you or a goodbye: a short answer, not the list of what the page offers again."""
    if GOODBYE.search(r.user_text):
        return Reply(_("Goodbye! I'm here on every page when you need me."))
    return Reply(_("You're welcome! Ask me anything else about this page."))


def _abilities_sentence(r: Reading) -> str:
    """"I'm the offline model on the X page: ... Here I can a; b; c." (the page's tools, payloads and facts)."""
    # plain sentences (no list or code markup): the reply reads the same while it streams and once rendered
    if speaks_english():
        can = [lower_first(_gist(t.get("description") or r.tool_title(t["name"]))) for t in r.tools if t["name"] != "get_payload"]
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


def match_help(r: Reading) -> float:
    return 30 if SMALLTALK.search(r.user_text) and not r.tool_results else 1


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
