"""Conversation titles, generated after the first turn (and again when its first question is edited): by the model
when its provider can, else from the content.

A title the user set (renamed over REST or in the tray) is never overwritten.
"""
from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce

from chat.conf import chat_settings
from chat.infra.db_threads import RUNS
from chat.models import Conversation, Run
from chat.providers.base import MessageEnd, Provider, ProviderError, ProviderRequest, TextDelta, Usage
from chat.quotas.budgets import budgets
from chat.quotas.costs import cost_of, total_tokens

log = logging.getLogger(__name__)
TITLE_MAX_CHARS = 60
TITLE_WORDS = 6
MODEL_TITLE_TIMEOUT = 10.0
TITLE_PROMPT = (
    "Write a title of at most six words for a conversation that starts with the exchange below. "
    "Answer with the title only: no quotes, no trailing punctuation."
)
# Words that carry no topic: a title made of them says nothing ("What is this about" -> "").
STOP_WORDS = frozenset("""
a an the and or but if then so of to in on at by for with about from into onto over under as is are was were be been
being am do does did done have has had i me my we our you your he she it its they them their this that these those
what which who whom whose when where why how can could would should will shall may might must please tell show give
let lets let's help hi hello hey thanks thank just also any some there here not no yes all me? up out get got make
i'm i've i'll i'd you're you've we're it's that's there's here's what's don't can't won't
""".split())
# an arithmetic expression stays one word ("17*23+4", not "17 23 4"); else a word with its apostrophes and hyphens
_WORD = re.compile(r"\d+(?:[.,]\d+)*(?:[-+*/^%\u00d7\u00f7]\d+(?:[.,]\d+)*)+|[\w][\w'\u2019-]*", re.UNICODE)
# link markers, code and heading marks, and emphasis: a `*` between two digits is a product, kept
_MARKUP = re.compile(r"\[\[[^\]]*\]\]|[`_#>|]|(?<!\d)\*+|\*+(?!\d)")


def title_initial(message: str) -> str:
    """The provisional title while the first answer is written: the question's first words."""
    first = " ".join(message.split())
    return first[:77] + "…" if len(first) > 80 else first


def title_from_content(question: str, answer: str = "", *, language: str | None = None) -> str:
    """A short title from the topic words of the question; a question of common words only ("What can you do
    here?", "hello"), or one in a language other than English (`language`, the user's, whose common words this
    list does not know), is its own title; only a question without words (files alone) takes the answer's first line."""
    english = not language or language.lower().startswith("en")
    if english and (topic := _topic_words(question)):
        return topic
    if said := " ".join(question.split()):
        return _clip(said[0].upper() + said[1:])
    return _topic_words(_first_line(answer)) or "New conversation"


def _topic_words(text: str) -> str:
    words = [w for w in _WORD.findall(_MARKUP.sub(" ", text)) if w.lower().replace("\u2019", "'") not in STOP_WORDS]
    if not words:
        return ""
    title = " ".join(words[:TITLE_WORDS])
    return _clip(title[0].upper() + title[1:])


@dataclass(slots=True)
class TitleCall:
    """A title call's outcome: the title (None when the call failed or said nothing) and the tokens it used."""

    title: str | None
    usage: Usage = field(default_factory=Usage)


async def title_from_model(provider: Provider, *, model: str, question: str, answer: str) -> TitleCall:
    """One short model call for a title, with its usage (the turn's run pays for it: budgets count every call)."""
    request = ProviderRequest(
        system=TITLE_PROMPT, tools=[], model=model, max_tokens=24, temperature=0.0, tool_choice="none",
        messages=[{"role": "user", "content": f"User: {question[:2000]}\n\nAssistant: {answer[:2000]}"}],
    )
    parts: list[str] = []
    usage = Usage()
    try:
        async with asyncio.timeout(MODEL_TITLE_TIMEOUT):
            async for event in provider.stream(request):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, MessageEnd):
                    usage.add(event.usage)
    except (ProviderError, TimeoutError):
        return TitleCall(None, usage)
    title = " ".join("".join(parts).split()).strip(" \"'.")
    return TitleCall(_clip(title) or None, usage)


def _usage_updates(usage: Usage | None, cost: float | None) -> dict[str, object]:
    """The run's columns a call made after it ended adds its tokens and cost to (none for a call that used none)."""
    if usage is None or not total_tokens(usage.as_dict()):
        return {}
    updates: dict[str, object] = {
        "input_tokens": F("input_tokens") + usage.input_tokens, "output_tokens": F("output_tokens") + usage.output_tokens,
        "cache_read_tokens": F("cache_read_tokens") + usage.cache_read_tokens,
        "cache_write_tokens": F("cache_write_tokens") + usage.cache_write_tokens,
    }
    if cost is not None:
        updates["cost_usd"] = Coalesce(F("cost_usd"), Decimal(0)) + Decimal(str(cost))
    return updates


def conversation_title_set(*, conversation_id: int, provisional: str, title: str, run_id: str | None = None,
                           usage: Usage | None = None, cost: float | None = None) -> bool:
    """Store a generated title unless the user renamed the conversation meanwhile; True when stored. The conversation
    keeps it as its `generated_title` in the same write (an edit of the first question can then tell it from a user's
    name); the title call's `usage` and `cost` are added to the run that asked for it (which budgets and reports sum),
    stored or not. One write per row, in one transaction."""
    with transaction.atomic():
        title = title[:200]
        stored = bool(Conversation.objects.filter(pk=conversation_id, title=provisional).update(title=title, generated_title=title))
        if run_id is not None and (updates := _usage_updates(usage, cost)):
            Run.objects.filter(pk=run_id).update(**updates)
    return stored


def title_is_generated(conversation: Conversation, first_question: str) -> bool:
    """True when the conversation's title is the server's (the first question's provisional title or the last one
    generated), False when its user named it."""
    return conversation.title in ("", title_initial(first_question), conversation.generated_title)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def _clip(title: str) -> str:
    return title if len(title) <= TITLE_MAX_CHARS else title[: TITLE_MAX_CHARS - 1].rstrip() + "…"


async def turn_title_set(provider: Provider, *, question: str, answer: str, language: str | None, run_id: str,
                         conversation_id: int, user_id: int) -> None:
    """After the first turn, or an edit of its question (the answer already delivered): the conversation's title, by
    the model when its provider generates titles, else from the content. Never raises."""
    try:
        title, usage, cost = None, None, None
        if provider.generates_titles:
            call = await title_from_model(provider, model=chat_settings.CHAT_MODEL, question=question, answer=answer)
            title = call.title
            if total_tokens(call.usage.as_dict()):  # the title's tokens count like the turn's, in the run and the day's budget
                usage, cost = call.usage, cost_of(chat_settings.CHAT_MODEL, call.usage)
                await budgets.spend(user_id, usage.as_dict(), cost)
        title = title or title_from_content(question, answer, language=language)
        await RUNS.run(conversation_title_set)(conversation_id=conversation_id, provisional=title_initial(question), title=title,
                                              run_id=run_id, usage=usage, cost=cost)
    except Exception:  # a title is a nicety: it never fails a turn
        log.exception("run %s: title not generated", run_id)
