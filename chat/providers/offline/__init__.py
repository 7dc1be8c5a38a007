"""The offline model: deterministic, no network. It reads the request as a model would (the page's context,
the user's words, the conversation so far, the tools and payloads the page offers) and answers through named
intents (chat/providers/offline/builtin_intents.py) with text, tool calls, payloads, chips and buttons, so every flow of
the product runs without a key. It takes the page's side of the request from the structured prompt input
(`ProviderRequest.prompt`). docs/offline-model.md says what it understands and how to add an intent or words."""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from django.utils import translation
from django.utils.translation import gettext

from chat.providers.base import MessageEnd, Provider, ProviderEvent, ProviderRequest, TextDelta, ToolInputDelta, ToolUseEnd, ToolUseStart, Usage
from chat.providers.offline import builtin_intents  # noqa: F401  (registers the built-in intents, in their order)
from chat.providers.offline.languages import Glossary, glossary
from chat.providers.offline.messages import message_text
from chat.providers.offline.prompt_text import context_from_text
from chat.providers.offline.reading import Reading
from chat.providers.offline.registry import Intent, IntentRegistry, Reply, intent, intents
from chat.providers.offline.vocabulary import Vocabulary, vocabulary

__all__ = ["MODEL_NAME", "Glossary", "Intent", "IntentRegistry", "OfflineProvider", "Reading", "Reply", "Vocabulary", "decide",
           "glossary", "intent", "intents", "vocabulary"]
MODEL_NAME = "pagechat-offline"  # what runs record as their model: never the configured CHAT_MODEL (it was not called)


class OfflineProvider(Provider):
    """A deterministic stand-in model that streams at `delay` seconds per chunk."""

    name = "offline"
    label = "Offline model"
    is_offline = True

    def __init__(self, delay: float = 0.02, **options: Any) -> None:
        super().__init__(**options)
        self.delay = delay

    @classmethod
    def from_settings(cls, settings: Any) -> OfflineProvider:
        return cls(delay=settings.CHAT_OFFLINE_DELAY)

    def model_name(self, configured: str) -> str:
        return MODEL_NAME

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        reply = decide(request)
        out_tokens = 0
        chunks = _chunks(reply.text)
        for chunk in chunks:
            if request.max_tokens and out_tokens >= request.max_tokens:  # a word is a token here
                # stopped at the limit as a hosted model stops: mid-answer, before any tool call ("Continue" goes on)
                said = "".join(chunks[:out_tokens])
                usage = Usage(input_tokens=_estimate(request), output_tokens=out_tokens)
                yield MessageEnd("max_tokens", usage, raw={"role": "assistant", "content": [{"type": "text", "text": said}], "intent": reply.intent})
                return
            out_tokens += 1
            yield TextDelta(chunk)
            if self.delay:
                await asyncio.sleep(self.delay)
            else:
                await asyncio.sleep(0)
        usage = Usage(input_tokens=_estimate(request), output_tokens=out_tokens)
        if reply.tool is None:
            yield MessageEnd("end_turn", usage, raw={"role": "assistant", "content": [{"type": "text", "text": reply.text}], "intent": reply.intent})
            return
        name, tool_input = reply.tool
        tool_id = "toolu_off_" + hashlib.sha1(f"{len(request.messages)}:{name}:{json.dumps(tool_input, sort_keys=True)}".encode()).hexdigest()[:16]
        raw = json.dumps(tool_input)
        yield ToolUseStart(tool_id, name)
        for i in range(0, len(raw), 16):
            yield ToolInputDelta(tool_id, raw[i:i + 16])
        yield ToolUseEnd(tool_id, name, tool_input)
        content = ([{"type": "text", "text": reply.text}] if reply.text else []) + [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]
        yield MessageEnd("tool_use", usage, raw={"role": "assistant", "content": content, "intent": reply.intent})


# A line of structured output (`SUGGESTED_VALUES: [...]`, `STREAM_PROPOSAL: {...}`) is one token: a cut at the
# token limit falls between lines of it, never inside one.
_CHUNK = re.compile(r"^[A-Z][A-Z_]*: [\[{].*(?:\n|$)|\S+\s*|\s+", re.M)


def _chunks(text: str) -> list[str]:
    """The answer as the tokens it streams: words with their trailing space, a structured line whole."""
    return _CHUNK.findall(text)


def _continuation(request: ProviderRequest) -> Reply | None:
    """After "Continue" (in the reply language) that follows an answer of this model cut at its token limit: the
    rest of that answer, as a model reads its own cut answer and goes on; None otherwise."""
    messages = request.messages
    if len(messages) < 3 or messages[-2].get("role") != "assistant" or messages[-1].get("role") != "user":
        return None
    if message_text(messages[-1]).strip().lower() not in {"continue", gettext("Continue").lower()}:
        return None
    cut = message_text(messages[-2]).rstrip()
    whole = decide(replace(request, messages=messages[:-2]))  # the answer it was writing (the same request then)
    if not cut or not whole.text.startswith(cut) or not (whole.text[len(cut):].strip() or whole.tool):
        return None
    return Reply(whole.text[len(cut):].lstrip(), whole.tool, f"{whole.intent} (continued)")


def _estimate(request: ProviderRequest) -> int:
    return (len(request.system) + len(json.dumps(request.messages, default=str))) // 4


def reply_language(system: str) -> str | None:
    """The language the system prompt's text asks answers in (its LANGUAGE section), if this site has a catalog for it."""
    return supported_language(context_from_text(system).language)


def supported_language(tag: str) -> str | None:
    """The site's language for the user's language `tag` ("de-at" -> "de"), None for none or one it has no catalog for."""
    if not tag:
        return None
    try:
        return translation.get_supported_language_variant(tag)
    except LookupError:  # not one of the site's LANGUAGES: English
        return None


def decide(request: ProviderRequest) -> Reply:
    """The whole policy: read the request, pick the best-scoring intent, let its handler answer (saying first
    that it cannot open the files the message carries, and naming them) - in the language the prompt asks for (this
    model's own phrases are translated; what it quotes from the page stays as it is)."""
    reading = Reading(request)
    with translation.override(supported_language(reading.context.language) or "en"):
        if (rest := _continuation(request)) is not None:
            return rest
        reply = intents.reply(reading)
        if reading.attachments:
            names = ", ".join(f"**{name}**" for name, _ in reading.attachments)
            lead = gettext("I am the offline model and cannot open attachments: I see that you attached %(names)s, but not what "
                           "is in them. Describe what you need from them in words.") % {"names": names}
            return Reply(lead + ("\n\n" + reply.text if reply.text.strip() else ""), reply.tool, reply.intent)
        return reply
