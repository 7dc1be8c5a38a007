"""Issue 37, items 3-5 below the transports: the titles people read for tools, pages and payload types (derived or
given, translated), the approval's labelled fields, the page's starters, and how titles reach the model's prompt."""
from __future__ import annotations

import logging
from typing import Annotated, Any

import pytest
from django.contrib.auth.models import AnonymousUser, Permission
from django.utils import translation
from django.utils.translation import gettext_lazy
from pydantic import Field

from chat.agent.types import ToolContext
from chat.infra.registration import title_from_name, title_shown
from chat.prompt.system import TOOL_TITLES, PromptInput, system_prompt_build
from chat.providers.base import ProviderRequest
from chat.providers.offline import decide
from chat.providers.offline.reading import Reading
from pages.access import access_for
from pages.registry import PageSpec, ServerAction, ServerActionResult
from pages.starters import page_starters
from payloads.spec import PayloadSpec
from tools.mcp import server_specs
from tools.models import McpServer
from tools.registry import registry as tools
from tools.spec import approval_fields, describe_call, spec_from_function


@pytest.mark.parametrize(("name", "title"), [
    ("search_articles", "Search articles"), ("rename_stream", "Rename stream"), ("getWeather", "Get weather"),
    ("fetch_URL", "Fetch URL"), ("crm__find_order", "Crm find order"), ("research_streams", "Research streams"),
    ("x", "X"), ("__", ""),
])
def test_a_title_is_derived_from_a_name(name: str, title: str) -> None:
    assert title_from_name(name) == title


def test_a_given_title_wins_and_a_lazy_one_is_translated_where_it_is_shown() -> None:
    def search_articles(query: str) -> str:
        """Search."""
        return query

    derived = spec_from_function(search_articles)
    given = spec_from_function(search_articles, name="demo_search", title=gettext_lazy("Search articles"))
    assert derived.display_title() == "Search articles" and given.display_title() == "Search articles"
    with translation.override("de"):  # the demo's catalog translates "Search articles"
        assert given.display_title() == "Artikel suchen"
        assert derived.display_title() == "Artikel suchen"  # a derived title goes through gettext too
        assert title_shown("", "a_name_no_catalog_knows") == "A name no catalog knows"
    assert PageSpec(name="research_streams").display_title() == "Research streams"
    assert PageSpec(name="p", title="Mine").display_title() == "Mine"
    assert PayloadSpec(type="stream_suggestions").display_title() == "Stream suggestions"


def test_payload_types_say_their_title_in_summaries_and_the_prompt() -> None:
    spec = PayloadSpec(type="stream_suggestions", parse_marker="STREAM_SUGGESTIONS:", title=gettext_lazy("Stream ideas"),
                       description="ideas", example={"a": "b"})
    assert spec.summary({"name": "Oncology"}) == "Stream ideas: Oncology"
    assert spec.instructions().startswith('### stream_suggestions (title: "Stream ideas") - ideas')
    system = system_prompt_build(PromptInput(payload_instructions=[spec.instructions()]))
    offer = Reading(ProviderRequest(system=system, messages=[{"role": "user", "content": "hi"}], tools=[], model="m", max_tokens=10)).payloads[0]
    assert (offer.type, offer.description, offer.shown) == ("stream_suggestions", "ideas", "Stream ideas")


def rename_thing(thing_id: Annotated[int, Field(title="Thing")], new_name: str, urgent: bool = False,
                 tags: list[str] | None = None, extra: dict[str, Any] | None = None) -> str:
    """Rename a thing."""
    return new_name


def test_an_approval_without_a_sentence_lists_labelled_fields_as_plain_text() -> None:
    spec = spec_from_function(rename_thing, requires_approval=True)
    summary, fields = spec.approval_words({"new_name": "B", "thing_id": 7, "urgent": True, "tags": ["x", "y"],
                                           "extra": {"due_date": "2026-12-01", "nested": {"a": 1}}, "unknown_key": None}, ToolContext())
    assert summary is None
    assert fields == [  # the schema's order, then what the model added
        {"label": "Thing", "value": "7"},  # a title someone wrote
        {"label": "New name", "value": "B"},  # pydantic's automatic "New Name" counts as none: derived
        {"label": "Urgent", "value": "yes"},
        {"label": "Tags", "value": "x, y"},
        {"label": "Extra", "value": "Due date: 2026-12-01; Nested: A: 1"},
        {"label": "Unknown key", "value": "—"},
    ]
    assert not any(c in "".join(f["value"] for f in fields) for c in "{}[]\"")
    long = approval_fields({}, {"text": "x" * 2000, **{f"k{i}": i for i in range(40)}})
    assert len(long) == 20 and len(long[0]["value"]) == 500 and long[0]["value"].endswith("…")
    with translation.override("de"):
        assert approval_fields({}, {"flag": False}) == [{"label": "Flag", "value": "nein"}]


def test_a_describe_hook_is_one_line_bounded_and_its_failure_falls_back_to_fields(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Any] = []

    def describe(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(ctx.user)
        return f"Rename\n  it   to {args['new_name']}?" + " x" * 400

    said = describe_call(describe, {"new_name": "B"}, ToolContext(user="ann"))
    assert said is not None and said.startswith("Rename it to B? x") and len(said) == 500 and seen == ["ann"]
    assert describe_call(lambda a, c: "  ", {}, ToolContext()) is None
    with caplog.at_level(logging.ERROR, logger="tools.spec"):
        assert describe_call(lambda a, c: 1 / 0, {}, ToolContext(), "boom") is None
    assert "tool boom: describe failed" in caplog.text
    spec = spec_from_function(rename_thing, describe=lambda a, c: 1 / 0)
    assert spec.approval_words({"thing_id": 1, "new_name": "B"}, ToolContext())[0] is None


def test_the_prompt_names_each_tool_with_its_title_and_the_page_with_its_title() -> None:
    system = system_prompt_build(PromptInput(
        tools=[("search_articles", "Search the corpus.\nMore."), ("calculate", "Evaluate.")],
        tool_titles={"search_articles": "Search articles", "calculate": 'A "quoted"\n title'}, page_title="Research streams"))
    assert TOOL_TITLES in system
    assert '- search_articles (title: "Search articles"): Search the corpus.' in system
    assert "- calculate (title: \"A 'quoted' title\"): Evaluate." in system
    assert "Page title: Research streams" in system
    reading = Reading(ProviderRequest(system=system, messages=[{"role": "user", "content": "hi"}], tools=[], model="m", max_tokens=10))
    assert reading.tool_titles == {"search_articles": "Search articles", "calculate": "A 'quoted' title"}
    assert reading.page_title == "Research streams" and reading.tool_title("get_weather") == "Get weather"
    # without titles (a prompt built by an older caller) the prompt is as it was
    bare = system_prompt_build(PromptInput(tools=[("calculate", "Evaluate.")]))
    assert "- calculate: Evaluate." in bare and TOOL_TITLES not in bare and "Page title" not in bare


def test_the_offline_model_says_titles_never_names() -> None:
    tool = {"name": "search_articles", "description": "Search the research article corpus by keywords.",
            "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    system = system_prompt_build(PromptInput(tools=[(tool["name"], tool["description"])], tool_titles={"search_articles": "Search articles"},
                                             page_title="Reports", request_context={"current_page": "reports"}))

    def ask(text: str, sys: str = system) -> Any:
        return decide(ProviderRequest(system=sys, messages=[{"role": "user", "content": text}], tools=[tool], model="m", max_tokens=200))

    reply = ask("search articles about CRISPR")
    assert reply.tool == ("search_articles", {"query": "CRISPR"}) and reply.text == "Let me use “Search articles” for that."
    assert "**Reports** page" in ask("What can you do here?").text
    asked = ask("search articles")  # nothing to search for: asked in words, with the title
    assert asked.tool is None and "“Search articles”" in asked.text and "search_articles" not in asked.text
    # a title the user writes names the tool, whatever its name ("Artikel suchen" for search_articles)
    german = system.replace('(title: "Search articles")', '(title: "Artikel suchen")')
    called = ask("Artikel suchen CRISPR", german)
    assert called.tool is not None and called.tool[0] == "search_articles" and called.text == "Let me use “Artikel suchen” for that."


def search_things(query: str) -> str:
    """Search things."""
    return query


def secret_tool() -> str:
    """Needs a permission."""
    return ""


@pytest.fixture
def page_tools() -> Any:
    specs = [spec_from_function(search_things), spec_from_function(secret_tool, permissions=["pagechat_demo.delete_researchstream"])]
    for spec in specs:
        tools.register(spec)
    yield
    for spec in specs:
        tools.unregister(spec.name)


@pytest.mark.django_db
def test_starters_are_the_pages_own_else_what_it_can_do(django_user_model: Any, page_tools: Any) -> None:
    user = django_user_model.objects.create_user("ann", password="pw")
    own = PageSpec(name="p", starters=[gettext_lazy("What can you do here?"), "  Two\n words ", "3", "4", "5"])
    assert page_starters(own, {}, access_for(user)) == ["What can you do here?", "Two words", "3", "4"]
    with translation.override("fr"):
        assert page_starters(own, {}, access_for(user))[0] == "Que pouvez-vous faire ici ?"

    noop = ServerAction("send_report", "Send it", lambda d, u, c: ServerActionResult(message=""))
    guarded = ServerAction("drop_all", "Drop it", noop.handler, permissions=["pagechat_demo.delete_researchstream"])
    page = PageSpec(name="q", tools=("search_things", "secret_tool", "missing_tool"), payloads=("research_stream_form", "search_results"),
                    server_actions=(noop, guarded))
    # the tool the user may use, the page's proposal (not the tool-made card), the action the user may run
    assert page_starters(page, {}, access_for(user)) == ["Search things", "Research stream preview", "Send report"]
    user.user_permissions.add(Permission.objects.get(codename="delete_researchstream"))
    assert page_starters(page, {}, access_for(django_user_model.objects.get(pk=user.pk))) == [
        "Search things", "Secret tool", "Research stream preview", "Send report"]
    # a page that offers nothing: general questions
    assert page_starters(PageSpec(name="empty"), {}, access_for(AnonymousUser())) == ["What can you do here?", "Summarize this page"]


def test_an_mcp_tool_is_titled_by_its_server_else_from_its_own_name() -> None:
    server = McpServer(name="crm", transport="http", url="https://crm.example/mcp", tools=[
        {"name": "find_order", "description": "Find an order.", "title": "Find an order", "input_schema": {"type": "object"}},
        {"name": "list_customers", "description": "List.", "input_schema": {"type": "object"}},
    ])
    titles = {spec.name: spec.display_title() for spec in server_specs(server)}
    assert titles == {"crm__find_order": "Find an order", "crm__list_customers": "List customers"}
