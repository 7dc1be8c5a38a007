"""The offline model: reads the page's context, proposes only when asked to change something, clarifies with chips,
never turns filler into a subject, refines one field at a time, and answers about an error; intents by name."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest

from chat.prompt.system import PromptInput, system_prompt_build
from chat.providers.base import ProviderRequest
from chat.providers.offline import IntentRegistry, Reading, Reply, decide, intents
from pages.registry import BUILTIN_CLIENT_ACTIONS, registry as pages
from payloads.registry import registry as payloads

STREAM_CONTEXT = """The user is editing a research stream, on the {tab} tab.

Stream: Lung Cancer Immunotherapy Monitor (id 3), weekly reports
Purpose: Track new evidence on immunotherapy in non-small cell lung cancer
Topics: EGFR-mutant NSCLC, KRAS G12C inhibitors
Entities: osimertinib, pembrolizumab
Retrieval queries: osimertinib resistance MET amplification; neoadjuvant nivolumab NSCLC
Sources: pubmed"""
ARTICLE_CONTEXT = """The user is reading an article of the corpus.
Article: Osimertinib resistance via MET amplification (id 3810001)
Journal: Lancet Oncol, 2023
Keywords: osimertinib, MET amplification, NSCLC
Abstract: Acquired resistance to osimertinib frequently involves MET amplification."""
SEARCH_TOOL = {"name": "search_articles", "description": "Search the research article corpus by keywords and show the matching articles.",
               "input_schema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}}
PREVIEW_TOOL = {"name": "preview_query", "description": "Preview a retrieval query: how many corpus articles match it and the top titles.",
                "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}


PROMPTS: dict[str, PromptInput] = {}  # each system prompt `system` built -> what it was built from (handed to the model too)


def system(page: str, context: dict[str, Any], context_text: str = "") -> str:
    """The page's system prompt; the model gets its structured input with it, as in a turn (`ask`)."""
    spec = pages.get(page)
    specs = [payloads.get(t) for t in spec.payload_types(context)]
    prompt = PromptInput(
        identity=spec.identity, context_text=context_text, request_context={"current_page": page, **context},
        payload_instructions=[p.instructions() for p in specs if p is not None and p.source == "llm"],
        client_actions=[(a.action, a.description, a.parameters) for a in (*BUILTIN_CLIENT_ACTIONS, *spec.client_actions)],
        server_actions=[(a.action, a.description, a.parameters) for a in spec.server_actions],
    )
    text = system_prompt_build(prompt)
    PROMPTS[text] = prompt
    return text


def ask(sys: str, *turns: str, tools: list[dict[str, Any]] | None = None) -> tuple[Reply, list[dict[str, Any]]]:
    """Play the user's turns, feeding each reply back as the assistant's message; the last reply and the messages."""
    messages: list[dict[str, Any]] = []
    reply = Reply("")
    for text in turns:
        messages.append({"role": "user", "content": text})
        reply = decide(ProviderRequest(system=sys, messages=list(messages), tools=tools or [], model="m", max_tokens=100,
                                       prompt=PROMPTS.get(sys)))
        messages.append({"role": "assistant", "content": reply.text})
    return reply, messages


def block(reply: Reply, marker: str) -> Any:
    m = re.search(rf"^{marker} (.*)$", reply.text, re.M)
    return json.loads(m.group(1)) if m else None


def test_question_about_the_stream_is_answered_from_the_page_not_proposed() -> None:
    reply, _ = ask(system("edit_research_stream", {"active_tab": "semantic"}, STREAM_CONTEXT.format(tab="SEMANTIC")),
                   "What is this stream about?")
    assert reply.intent == "answer_from_page"
    assert "Lung Cancer Immunotherapy Monitor" in reply.text and "immunotherapy in non-small cell lung cancer" in reply.text
    assert "EGFR-mutant NSCLC" in reply.text and "SCHEMA_PROPOSAL" not in reply.text
    assert "Offline model" not in reply.text  # labelled once, by the tray


def test_question_naming_a_fact_answers_that_fact() -> None:
    reply, _ = ask(system("edit_research_stream", {"active_tab": "retrieval"}, STREAM_CONTEXT.format(tab="RETRIEVAL")),
                   "which queries does it use?")
    assert reply.intent == "answer_from_page" and "neoadjuvant nivolumab NSCLC" in reply.text and "Purpose" not in reply.text


@pytest.mark.parametrize("text", ["I am on this tab, can you propose better queries?", "improve this"])
def test_filler_words_never_become_the_subject(text: str) -> None:
    reply, _ = ask(system("edit_research_stream", {"active_tab": "retrieval"}, STREAM_CONTEXT.format(tab="RETRIEVAL")), text)
    proposed = block(reply, "RETRIEVAL_PROPOSAL:")
    if proposed is None:  # several payload types fit the tab: a question with chips, never a filler subject
        assert reply.intent == "clarify" and "Retrieval proposal" in reply.text
        return
    queries = proposed["queries"]
    assert reply.intent == "propose"
    # the subject comes from the stream on screen, never from "tab", "am", "this", "better", "page"
    assert all(q.startswith("EGFR-mutant NSCLC") for q in queries), queries
    assert not re.search(r"\b(tab|am|this|better|page|queries)\b", " ".join(queries), re.I)


def test_a_subject_of_the_users_own_wins_over_the_page() -> None:
    reply, _ = ask(system("edit_research_stream", {"active_tab": "retrieval"}, STREAM_CONTEXT.format(tab="RETRIEVAL")),
                   "propose queries for CAR-T")
    assert block(reply, "RETRIEVAL_PROPOSAL:")["queries"][0] == "CAR-T AND clinical trial"


def test_on_an_article_page_a_search_uses_the_articles_keywords_not_the_sentence() -> None:
    sys = system("reports", {"entity_type": "article", "article_id": "3810001"}, ARTICLE_CONTEXT)
    reply, _ = ask(sys, "Can you find more papers on the topic of this article?", tools=[SEARCH_TOOL])
    assert reply.tool == ("search_articles", {"query": "osimertinib MET amplification NSCLC"})
    about, _ = ask(sys, "What is this article about?", tools=[SEARCH_TOOL])
    assert about.tool is None and "frequently involves MET amplification" in about.text
    own, _ = ask(sys, "search articles about CRISPR gene editing", tools=[SEARCH_TOOL])
    assert own.tool == ("search_articles", {"query": "CRISPR gene editing"})


def test_ambiguous_change_request_gets_a_question_with_chips() -> None:
    reply, _ = ask(system("streams_list", {}, "The user is on the research streams list. They have no streams yet."), "make something")
    assert reply.intent == "clarify" and "STREAM_SUGGESTIONS" not in reply.text
    chips = block(reply, "SUGGESTED_VALUES:")
    assert [c["label"] for c in chips] == ["Stream ideas", "Portfolio insights"]  # the payload types' titles


def test_greeting_says_what_the_page_offers() -> None:
    reply, _ = ask(system("edit_research_stream", {"active_tab": "retrieval"}, STREAM_CONTEXT.format(tab="RETRIEVAL")),
                   "hello there, tell me what you can do", tools=[PREVIEW_TOOL])
    assert reply.intent == "help" and "preview a retrieval query" in reply.text and "RETRIEVAL_PROPOSAL" not in reply.text


HOME_CONTEXT = """The user is on the home page. They have 2 research stream(s) and 1 report(s).
Page: Home
Research streams: 2 (the latest: CRISPR Therapeutics Watch (biweekly); Lung Cancer Immunotherapy Monitor (weekly))
Reports: 1"""


@pytest.mark.parametrize("text", ["Write a python function that adds two numbers", "write me a poem about the sea",
                                  "Translate 'good morning' into German", "draft an email to my team"])
def test_free_text_it_cannot_write_is_said_honestly_not_proposed(text: str) -> None:
    reply, _ = ask(system("home", {}, HOME_CONTEXT), text)
    assert reply.intent == "free_text" and "RESEARCH_STREAM_FORM" not in reply.text
    assert "needs a language model" in reply.text and "prepare a proposed research stream configuration" in reply.text
    assert [c["label"] for c in block(reply, "SUGGESTED_VALUES:")][-2:] == ["Suggest research stream preview", "What is this?"]


def test_a_change_request_naming_the_payload_is_still_a_proposal() -> None:
    reply, _ = ask(system("home", {}, HOME_CONTEXT), "create a research stream about poems in oncology")
    assert reply.intent == "propose" and block(reply, "RESEARCH_STREAM_FORM:")["stream_name"] == "Poems Oncology Intelligence"
    improve, _ = ask(system("edit_research_stream", {"active_tab": "retrieval"}, STREAM_CONTEXT.format(tab="RETRIEVAL")),
                     "write better queries")
    assert improve.intent in ("propose", "clarify")  # "write" alone is a change request about what the page offers


@pytest.mark.parametrize(("text", "says"), [("thanks!", "You're welcome!"), ("Thank you very much.", "You're welcome!"),
                                             ("bye", "Goodbye!")])
def test_thanks_and_goodbye_get_a_short_answer(text: str, says: str) -> None:
    reply, _ = ask(system("home", {}, HOME_CONTEXT), text)
    assert reply.intent == "thanks" and reply.text.startswith(says) and "SUGGESTED_VALUES" not in reply.text and "\n" not in reply.text


def test_a_question_nothing_here_answers_says_so() -> None:
    reply, _ = ask(system("home", {}, HOME_CONTEXT), "explain quantum computing in simple terms")
    assert reply.intent == "help" and reply.text.startswith("I can't answer that from this page.")
    unclear, _ = ask(system("home", {}, HOME_CONTEXT), "banana")
    assert unclear.text.startswith("I'm not sure what you would like me to do.")


def test_the_home_pages_facts_answer_how_many() -> None:
    reply, _ = ask(system("home", {}, HOME_CONTEXT), "how many streams do I have?")
    assert reply.intent == "answer_from_page" and "**Research streams:** 2" in reply.text and "Reports" not in reply.text
    reports, _ = ask(system("home", {}, HOME_CONTEXT), "how many reports?")
    assert "**Reports:** 1" in reports.text


def test_on_a_list_page_every_entry_is_answered_not_the_first_as_the_subject() -> None:
    listing = "The user is on the research streams list. Their streams:\n\n" + "\n\n".join(
        f"Stream: {name} (id {i}), weekly reports\nPurpose: {purpose}\nTopics: {topic}"
        for i, (name, purpose, topic) in enumerate([("CRISPR Watch", "Follow gene editing.", "CRISPR"),
                                                    ("Lung Cancer Monitor", "Track NSCLC evidence.", "NSCLC")], 1))
    sys = system("streams_list", {}, listing)
    streams, _ = ask(sys, "what streams do I have?")
    assert streams.intent == "answer_from_page" and "On **" not in streams.text
    assert streams.text.startswith("- **Stream:** CRISPR Watch (id 1), weekly reports\n- **Stream:** Lung Cancer Monitor (id 2)")
    purposes, _ = ask(sys, "what are the purposes of my streams?")
    assert "- **Purpose:** Follow gene editing.\n- **Stream:** Lung Cancer Monitor" in purposes.text and "Topics" not in purposes.text


def test_example_conversation_refines_one_field_at_a_time() -> None:
    sys = system("home", {}, "The user is on the home page. They have 0 research stream(s).")
    first, _ = ask(sys, "Help me create a research stream")
    assert [c["label"] for c in block(first, "SUGGESTED_VALUES:")] == ["Oncology", "Cardiology", "Neurology", "Immunology"]
    assert "RESEARCH_STREAM_FORM" not in first.text

    form, msgs = ask(sys, "Help me create a research stream", "oncology research")
    data = block(form, "RESEARCH_STREAM_FORM:")
    assert data["stream_name"] == "Oncology Intelligence"
    assert [c["label"] for c in block(form, "SUGGESTED_VALUES:")] == ["Change name", "Add more channels", "Different frequency"]
    create = block(form, "SUGGESTED_ACTIONS:")[0]
    assert create["action"] == "create_stream" and create["data"] == data

    names, _ = ask(sys, "Help me create a research stream", "oncology research", "I want to change the stream name")
    assert "RESEARCH_STREAM_FORM" not in names.text and "name the stream" in names.text  # not the whole form again
    chips = block(names, "SUGGESTED_VALUES:")
    assert chips[-1] == {"label": "Let me type it", "value": "I'll type the name"} and len(chips) == 3

    renamed, _ = ask(sys, "Help me create a research stream", "oncology research", "I want to change the stream name", chips[0]["value"])
    assert block(renamed, "RESEARCH_STREAM_FORM:") == {**data, "stream_name": chips[0]["value"]}

    typed, _ = ask(sys, "Help me create a research stream", "oncology research", "I want to change the stream name",
                   "I'll type the name", "Tumour Board Digest")
    assert block(typed, "RESEARCH_STREAM_FORM:")["stream_name"] == "Tumour Board Digest"

    more, _ = ask(sys, "Help me create a research stream", "oncology research", "add more channels")
    channels = block(more, "RESEARCH_STREAM_FORM:")["channels"]
    assert [c["type"] for c in channels] == ["scientific", "clinical", "regulatory", "news"]

    freq, _ = ask(sys, "Help me create a research stream", "oncology research", "change the report frequency")
    assert [c["value"] for c in block(freq, "SUGGESTED_VALUES:")] == ["daily", "biweekly", "monthly"]
    monthly, _ = ask(sys, "Help me create a research stream", "oncology research", "change the report frequency", "monthly")
    assert block(monthly, "RESEARCH_STREAM_FORM:") == {**data, "report_frequency": "monthly"}


def test_error_in_context_is_answered_as_troubleshooting() -> None:
    error = {"message": "Permission denied for stream 12", "code": "forbidden", "context": {"stream_id": 12}}
    sys = system("home", {"error": error}, "The user is on the home page.")
    reply, _ = ask(sys, "why did this fail?")
    assert reply.intent == "troubleshoot"
    assert "Permission denied for stream 12" in reply.text and "`forbidden`" in reply.text and "signed in" in reply.text
    assert '"stream_id": 12' in reply.text


def test_same_request_same_reply() -> None:
    sys = system("home", {}, "The user is on the home page.")
    assert ask(sys, "Help me create a research stream about gene therapy")[0] == ask(sys, "Help me create a research stream about gene therapy")[0]


def test_intents_are_looked_up_by_name_and_a_host_can_add_one() -> None:
    assert {"answer_from_page", "propose", "clarify", "use_tool", "troubleshoot", "refine_field", "help"} <= set(intents.names())
    mine = IntentRegistry()

    @mine.register("opening_hours", lambda r: 90 if "open" in r.user_text else 0)
    def hours(r: Reading) -> Reply:
        return Reply("We are open 9 to 5.")

    request = ProviderRequest(system="# CONTEXT\nx", messages=[{"role": "user", "content": "when are you open?"}], tools=[], model="m", max_tokens=1)
    assert mine.choose(Reading(request)) == "opening_hours" and mine.reply(Reading(request)).text == "We are open 9 to 5."
    intents.register("opening_hours", lambda r: 90 if "open" in r.user_text else 0)(hours)
    try:
        assert decide(request).intent == "opening_hours"
    finally:
        intents.unregister("opening_hours")
    assert decide(request).intent != "opening_hours"


def test_an_identifier_field_takes_the_number_the_user_wrote() -> None:
    """A host's tool keyed by `order_number` (not `..._id`) gets the number from the question."""
    tool = {"name": "order_status", "description": "Look up the delivery status of one of the user's orders by its order number.",
            "input_schema": {"type": "object", "properties": {"order_number": {"type": "string"}}, "required": ["order_number"]}}
    sys = system_prompt_build(PromptInput(identity="You help customers with their orders.", context_text="",
                                          request_context={"current_page": "orders", "order_count": 1}))
    reply, _ = ask(sys, "What is the status of order 1042?", tools=[tool])
    assert reply.tool == ("order_status", {"order_number": "1042"})


def test_a_request_naming_every_word_of_a_tool_calls_it_rather_than_proposing() -> None:
    """On the streams list (which offers stream suggestions), "rename stream 1 to ..." is the approval-gated tool."""
    rename = {"name": "rename_stream", "description": "Rename one of the user's research streams (the user approves it first).",
              "input_schema": {"type": "object", "properties": {"stream_id": {"type": "integer"}, "new_name": {"type": "string"}},
                               "required": ["stream_id", "new_name"]}}
    sys = system("streams_list", {}, "The user is on the research streams list. Their streams:\n\nStream: Oncology (id 1)")
    reply, _ = ask(sys, "Rename stream 1 to Oncology Watch", tools=[rename])
    assert reply.tool == ("rename_stream", {"stream_id": 1, "new_name": "Oncology Watch"})
    # the user's Deny, as the agent loop reports it: said as their choice, not as a failure
    use = {"type": "tool_use", "id": "toolu_1", "name": "rename_stream", "input": {"stream_id": 1, "new_name": "Oncology Watch"}}
    denied = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": "Error: the user did not approve this tool call."}
    reply = decide(ProviderRequest(system=sys, tools=[rename], model="m", max_tokens=100, messages=[
        {"role": "user", "content": "Rename stream 1 to Oncology Watch"}, {"role": "assistant", "content": [use]},
        {"role": "user", "content": [denied]}]))
    assert reply.text == "You did not approve “Rename stream”, so it did not run and nothing changed."  # its title, not its name
    done = {**denied, "is_error": False, "content": "Renamed the stream to 'Oncology Watch'."}
    reply = decide(ProviderRequest(system=sys, tools=[rename], model="m", max_tokens=100, messages=[
        {"role": "user", "content": "Rename stream 1 to Oncology Watch"}, {"role": "assistant", "content": [use]},
        {"role": "user", "content": [done]}]))
    assert reply.text == "Renamed the stream to 'Oncology Watch'."  # one full stop, not two
    # one word of the name is not enough: "suggest a stream" still proposes
    reply, _ = ask(sys, "Suggest a new stream about oncology", tools=[rename])
    assert reply.tool is None and block(reply, "STREAM_SUGGESTIONS:") is not None


CALCULATE = {"name": "calculate", "description": "Evaluate an arithmetic expression.",
             "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}
CLOCK = {"name": "get_current_time", "description": "Get the current date and time.", "input_schema": {"type": "object", "properties": {}}}


def _tool_round(sys: str, question: str, tools: list[dict[str, Any]], outputs: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """Play one turn as the agent loop does (each tool's output fed back) and return the tool calls in order."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(5):
        reply = decide(ProviderRequest(system=sys, messages=list(messages), tools=tools, model="m", max_tokens=200))
        if reply.tool is None:
            return calls
        calls.append(reply.tool)
        use = {"type": "tool_use", "id": f"toolu_{i}", "name": reply.tool[0], "input": reply.tool[1]}
        messages += [{"role": "assistant", "content": [{"type": "text", "text": reply.text}, use]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": outputs[reply.tool[0]]}]}]
    raise AssertionError(f"more than 5 model calls: {calls}")


def test_a_message_asking_two_things_calls_one_tool_after_the_other() -> None:
    sys = system("home", {})
    outputs = {"calculate": "17*23+4 = 395", "get_current_time": "2026-11-25 04:30 UTC"}
    assert _tool_round(sys, "What is 17*23+4? And what time is it?", [CALCULATE, CLOCK], outputs) == [
        ("calculate", {"expression": "17*23+4"}), ("get_current_time", {})]
    assert sorted(_tool_round(sys, "what time is it and calculate 6*7", [CALCULATE, CLOCK], outputs)) == [
        ("calculate", {"expression": "6*7"}), ("get_current_time", {})]
    # one thing asked: one call, even when the words could name another tool's topic
    assert _tool_round(sys, "calculate 6*7", [CALCULATE, CLOCK], outputs) == [("calculate", {"expression": "6*7"})]
    assert _tool_round(sys, "search articles about the time of day and calculate nothing",
                       [SEARCH_TOOL, CLOCK], {**outputs, "search_articles": "3 articles"})[0][0] == "search_articles"


async def _stream(request: ProviderRequest) -> tuple[str, str]:
    """The text the offline model streams for `request` and why it stopped."""
    from chat.providers.base import MessageEnd, TextDelta
    from chat.providers.offline import OfflineProvider

    text, stop = "", ""
    async for event in OfflineProvider(delay=0).stream(request):
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, MessageEnd):
            stop = event.stop_reason
    return text, stop


async def test_the_answer_stops_at_max_tokens_and_continue_goes_on_where_it_stopped() -> None:
    """A word is a token: at `max_tokens` the answer stops as a hosted model's does ("max_tokens"), and "Continue"
    after it gets the rest, cut again at the limit, until the whole answer is told."""
    sys = system("home", {"current_page": "home"})
    messages: list[dict[str, Any]] = [{"role": "user", "content": "what can you do?"}]
    whole, stop = await _stream(ProviderRequest(system=sys, messages=list(messages), tools=[], model="m", max_tokens=2000))
    assert stop == "end_turn" and len(whole.split()) > 12
    parts: list[str] = []
    for _ in range(20):
        text, stop = await _stream(ProviderRequest(system=sys, messages=list(messages), tools=[], model="m", max_tokens=5))
        parts.append(text)
        if stop == "end_turn":
            break
        assert stop == "max_tokens" and len(text.split()) == 5
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "Continue"}]
    assert stop == "end_turn" and len(parts) > 2
    assert " ".join(" ".join(parts).split()) == " ".join(whole.split())  # nothing lost, nothing said twice
    structured = [m.group(1) for p in parts for m in re.finditer(r"^[A-Z][A-Z_]*: ([\[{].*)$", p, re.M)]
    assert structured and all(json.loads(s) for s in structured)  # a line of structure (the chips) is never cut


def test_continue_after_a_whole_answer_is_an_ordinary_message() -> None:
    sys = system("home", {"current_page": "home"})
    reply, messages = ask(sys, "hello")
    again = decide(ProviderRequest(system=sys, messages=[*messages, {"role": "user", "content": "Continue"}], tools=[], model="m", max_tokens=100))
    assert "(continued)" not in again.intent  # nothing was cut: no rest to tell
