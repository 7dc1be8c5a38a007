"""The offline model takes the page's side of a request from the structured prompt input the system text is written
from (`ProviderRequest.prompt`); given only the text, it reads the same facts back from it, so both answer alike."""
from __future__ import annotations

from typing import Any

import pytest
from django.utils import translation

from chat.prompt.system import PromptInput, system_prompt_build
from chat.providers.base import ProviderRequest
from chat.providers.offline import Reading, decide
from chat.providers.offline.context import context_from_prompt
from chat.providers.offline.prompt_text import context_from_text
from pages.registry import BUILTIN_CLIENT_ACTIONS, registry as pages
from payloads.registry import registry as payloads
from tools.registry import registry as tools

STREAM = """The user is editing a research stream, on the {tab} tab.

Stream: Lung Cancer Immunotherapy Monitor (id 3), weekly reports
Purpose: Track new evidence on immunotherapy in non-small cell lung cancer
Topics: EGFR-mutant NSCLC, KRAS G12C inhibitors
Retrieval queries: osimertinib resistance MET amplification; neoadjuvant nivolumab NSCLC"""
MESSAGES = ["hi", "What is this about?", "propose something", "Suggest a new stream about oncology", "search articles about CRISPR",
            "delete this stream", "run a test report", "what is 6*7?", "write me a poem", "thanks", "which queries does it use?"]


def prompt_of(page: str, context: dict[str, Any], context_text: str, language: str | None) -> tuple[PromptInput, list[dict[str, Any]]]:
    """What a turn on `page` writes its prompt from (as chat.turns.planning does), and the tools it offers."""
    spec = pages.get(page)
    offered = tools.resolve([*tools.global_names(), *spec.tool_names(context)])
    specs = [p for name in spec.payload_types(context) if (p := payloads.get(name)) is not None]
    chain = spec.tab_chain(context)
    prompt = PromptInput(
        identity=spec.identity or PromptInput.identity, context_text=context_text, request_context={"current_page": page, **context},
        tools=[(t.name, t.description) for t in offered], tool_titles={t.name: t.display_title() for t in offered},
        page_title=spec.display_title(), tab_title=chain[0].display_title() if chain else "",
        payload_instructions=[p.instructions() for p in specs if p.source == "llm"],
        client_actions=[(a.action, a.description, a.parameters) for a in (*BUILTIN_CLIENT_ACTIONS, *spec.client_actions)],
        server_actions=[(a.action, a.description, a.parameters) for a in spec.server_actions], language=language,
    )
    return prompt, [t.as_agent_tool().definition() for t in offered]


CASES = [("home", {}, "The user is on the home page.\nResearch streams: 2\nReports: 1"),
         ("streams_list", {}, "The user is on the research streams list. Their streams:\n\nStream: Oncology (id 1)"),
         ("edit_research_stream", {"active_tab": "retrieval", "stream_id": 3}, STREAM.format(tab="RETRIEVAL")),
         ("edit_research_stream", {"active_tab": "semantic", "stream_id": 3}, STREAM.format(tab="SEMANTIC")),
         ("reports", {"entity_type": "article", "article_id": "3810001"}, "Article: Osimertinib resistance (id 3810001)\nKeywords: MET"),
         ("home", {"error": {"message": "Permission denied", "code": 403}}, "The user is on the home page.")]


@pytest.mark.parametrize("language", [None, "de", "fr-FR"])
@pytest.mark.parametrize(("page", "context", "context_text"), CASES)
def test_the_structured_input_and_the_text_give_the_same_replies(page: str, context: dict[str, Any], context_text: str,
                                                                 language: str | None) -> None:
    prompt, offered = prompt_of(page, context, context_text, language)
    system = system_prompt_build(prompt)
    assert context_from_prompt(prompt) == context_from_text(system)
    for text in MESSAGES:
        messages = [{"role": "user", "content": text}]
        as_text = decide(ProviderRequest(system=system, messages=messages, tools=offered, model="m", max_tokens=300))
        structured = decide(ProviderRequest(system=system, messages=messages, tools=offered, model="m", max_tokens=300, prompt=prompt))
        assert structured == as_text, text


def test_the_page_is_read_from_the_structured_input_not_the_text() -> None:
    prompt = PromptInput(context_text="The user is on the orders page.\nOrder: 1042 (shipped)", request_context={"current_page": "orders"},
                         page_title="Orders", language="de")
    reading = Reading(ProviderRequest(system="", messages=[{"role": "user", "content": "What is this?"}], tools=[], model="m",
                                      max_tokens=100, prompt=prompt))
    assert reading.facts == [("Order", "1042 (shipped)")] and reading.page == "orders" and reading.page_title == "Orders"
    assert reading.language == "de"
    with translation.override("en"):
        reply = decide(reading.request)
    assert reply.intent == "answer_from_page" and "1042 (shipped)" in reply.text


def test_a_turn_hands_the_prompt_input_to_the_model_with_its_text(django_user_model: Any) -> None:
    from chat.events import ChatSend
    from chat.models import Conversation
    from chat.turns.planning import turn_plan_build

    user = django_user_model.objects.create(username="reader")
    conversation = Conversation.objects.create(owner=user)
    plan = turn_plan_build(user=user, conversation_id=conversation.pk, new_conversation=True,
                           frame=ChatSend(message="hi", context={"current_page": "home"}))
    assert plan.prompt is not None and system_prompt_build(plan.prompt) == plan.system


pytestmark = pytest.mark.django_db
