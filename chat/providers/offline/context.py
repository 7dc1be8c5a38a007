"""What the system prompt tells a model about the page, as the offline model takes it: from the structured input the
prompt is written from (`ProviderRequest.prompt`), or, for a request that carries only the text, read back from the
text (chat/providers/offline/prompt_text.py). Either way the same facts, so its replies do not depend on which."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chat.providers.base import StructuredPrompt
from chat.providers.offline.offers import ActionOffer, PayloadOffer, Troubleshooting, actions_offered, parse_payloads


@dataclass(frozen=True)
class PromptContext:
    """The page's side of one request: its context text, request context, titles, language, error and offers."""

    context_text: str = ""  # the page's context builder's text
    # the request context as the prompt shows it: without `csrf_token`, without `error` when that is troubleshooting
    request_context: dict[str, Any] = field(default_factory=dict)
    interaction: str = "text_input"
    page_title: str = ""  # the title the prompt gives the page ("" when it gives none)
    tab_title: str = ""  # the title it gives the active tab ("" when none)
    language: str = ""  # the user's language tag, lower case with hyphens ("de", "pt-br"), "" when not given
    troubleshooting: Troubleshooting | None = None
    payloads: list[PayloadOffer] = field(default_factory=list)
    actions: list[ActionOffer] = field(default_factory=list)
    tool_titles: dict[str, str] = field(default_factory=dict)  # tool name -> its title, for the tools that have one


def context_from_prompt(prompt: StructuredPrompt) -> PromptContext:
    """The context as the structured prompt input gives it (what `chat.prompt.system.system_prompt_build` writes out)."""
    fields = prompt.error  # bounded as the prompt writes it
    error = Troubleshooting(fields["message"], fields["code"], fields["context"]) if fields else None
    shown = {k: v for k, v in prompt.request_context.items() if k != "csrf_token" and not (k == "error" and error)}
    titles = {name: " ".join(title.split()).replace('"', "'") for name, _ in prompt.tools if (title := prompt.tool_titles.get(name, ""))}
    return PromptContext(
        context_text=prompt.context_text.strip(),
        request_context=shown,
        interaction=prompt.interaction_type,
        page_title=" ".join(prompt.page_title.split()),
        tab_title=" ".join(prompt.tab_title.split()),
        language=(prompt.language or "").strip().replace("_", "-").lower(),
        troubleshooting=error,
        payloads=parse_payloads("\n\n".join(i.strip() for i in prompt.payload_instructions)),
        actions=actions_offered("client", prompt.client_actions) + actions_offered("server", prompt.server_actions),
        tool_titles=titles,
    )
