"""How the offline model reads a request: the page's side of it (`PromptContext`: from the structured prompt input),
the user's words without filler, and what was said earlier in the conversation."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from chat.infra.registration import title_shown
from chat.providers.base import ProviderRequest
from chat.providers.offline.context import PromptContext, context_from_prompt
from chat.providers.offline.languages import glossary
from chat.providers.offline.messages import content_blocks, message_attachments, message_text
from chat.providers.offline.offers import ActionOffer, PayloadOffer, Troubleshooting
from chat.providers.offline.prompt_text import context_from_text, sections
from chat.providers.offline.words import CHANGE_WORDS, QUESTION_WORDS, norm, tokens, words


@dataclass
class Reading:
    """Everything the offline model understood of one request."""

    request: ProviderRequest

    @cached_property
    def context(self) -> PromptContext:
        """The page's side of the request: from its structured prompt input, else read back from the prompt's text."""
        if self.request.prompt is not None:
            return context_from_prompt(self.request.prompt)
        return context_from_text(self.request.system)

    @cached_property
    def sections(self) -> dict[str, str]:
        """The prompt text's `# NAME` sections (what a model reading only the text sees)."""
        return sections(self.request.system)

    @cached_property
    def context_lines(self) -> list[str]:
        """The page's context builder text, by line."""
        return [line.rstrip() for line in self.context.context_text.splitlines()]

    @cached_property
    def facts(self) -> list[tuple[str, str]]:
        """`Key: value` lines of the page context, in order: what the page says is on screen."""
        out = []
        for line in self.context_lines:
            m = re.match(r"^-?\s*([A-Z][\w ()/-]{0,40}?): (.+)$", line.strip())
            if m and m.group(2).strip() not in ("(none)", ""):
                out.append((m.group(1).strip(), m.group(2).strip()))
        return out

    @cached_property
    def situation(self) -> str:
        """The page context's first prose line ("The user is editing a research stream, on the RETRIEVAL tab.")."""
        for line in self.context_lines:
            if line.strip() and not re.match(r"^-?\s*[A-Z][\w ()/-]{0,40}?: ", line.strip()):
                return line.strip()
        return ""

    @property
    def request_context(self) -> dict[str, Any]:
        """The request context as the prompt shows it (`current_page`, `active_tab`, the page's own keys)."""
        return self.context.request_context

    @property
    def page(self) -> str:
        return str(self.request_context.get("current_page") or "")

    @property
    def active_tab(self) -> str:
        return str(self.request_context.get("active_tab") or "")

    @property
    def interaction(self) -> str:
        return self.context.interaction

    @property
    def troubleshooting(self) -> Troubleshooting | None:
        return self.context.troubleshooting

    @property
    def payloads(self) -> list[PayloadOffer]:
        return self.context.payloads

    @property
    def actions(self) -> list[ActionOffer]:
        return self.context.actions

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.request.tools

    @property
    def tool_titles(self) -> dict[str, str]:
        """Tool name -> its title, as the prompt gives it."""
        return self.context.tool_titles

    def tool_title(self, name: str) -> str:
        """What to call the tool `name` when speaking to the user: its title, else one derived from its name."""
        return self.tool_titles.get(name) or title_shown("", name)

    @cached_property
    def page_title(self) -> str:
        """The page's title as the prompt gives it, else its name in words."""
        return self.context.page_title or (title_shown("", self.page) if self.page else "")

    @cached_property
    def tab_title(self) -> str:
        """The active tab's title as the prompt gives it, else its name in words through the catalogs; "" without an
        active tab."""
        if not self.active_tab:
            return ""
        return self.context.tab_title or title_shown("", self.active_tab)

    @cached_property
    def language(self) -> str:
        """The user's base language as the prompt names it ("de"), else ""."""
        return self.context.language.split("-")[0]

    @cached_property
    def written_text(self) -> str:
        """The user's last typed (or clicked) message, as they wrote it."""
        for msg in reversed(self.request.messages):
            if msg.get("role") == "user":
                text = message_text(msg)
                if text.strip():
                    return text.strip()
        return ""

    @cached_property
    def user_text(self) -> str:
        """The user's last message as this model reads it: in another language (the prompt's LANGUAGE section), the
        words its glossary knows in English, the rest (the subject, a name) as written (chat/providers/offline/languages.py)."""
        return glossary.gloss(self.written_text, self.language)

    @cached_property
    def attachments(self) -> list[tuple[str, str]]:
        """(name, content type) of the files attached to the request's last user message (not to tool results)."""
        last = self.request.messages[-1] if self.request.messages else {}
        return message_attachments(last) if last.get("role") == "user" else []

    @cached_property
    def user_words(self) -> set[str]:
        return words(self.user_text)

    @cached_property
    def user_tokens(self) -> set[str]:
        return set(tokens(self.user_text)) | {norm(t) for t in tokens(self.user_text)}

    @property
    def asks_change(self) -> bool:
        return bool(self.user_tokens & CHANGE_WORDS)

    @property
    def is_question(self) -> bool:
        toks = tokens(self.user_text)
        return self.user_text.rstrip().endswith("?") or bool(toks and toks[0] in QUESTION_WORDS)

    @cached_property
    def tool_results(self) -> list[dict[str, Any]]:
        last = self.request.messages[-1] if self.request.messages else {}
        return [b for b in content_blocks(last) if b.get("type") == "tool_result"]

    @cached_property
    def previous_assistant_text(self) -> str:
        """What the assistant said last, before the user's current message (its raw text, markers included)."""
        seen_user = False
        for msg in reversed(self.request.messages):
            if msg.get("role") == "user" and message_text(msg).strip():
                seen_user = True
                continue
            if seen_user and msg.get("role") == "assistant":
                return message_text(msg)
        return ""

    def last_payload(self) -> tuple[PayloadOffer, Any] | None:
        """The newest payload this page offers that the assistant emitted earlier in the conversation."""
        by_marker = {o.marker: o for o in self.payloads}
        for msg in reversed(self.request.messages):
            if msg.get("role") != "assistant":
                continue
            text = message_text(msg)
            for marker, offer in by_marker.items():
                at = text.rfind(marker)
                if at < 0:
                    continue
                try:
                    data, _ = json.JSONDecoder().raw_decode(text[at + len(marker):].lstrip())
                except ValueError:
                    continue
                return offer, data
        return None

    def tool_names_for(self, ids: list[Any]) -> list[str]:
        names = {b.get("id"): b.get("name") for m in self.request.messages if m.get("role") == "assistant"
                 for b in content_blocks(m) if b.get("type") == "tool_use"}
        return [str(names.get(i, "tool")) for i in ids]
