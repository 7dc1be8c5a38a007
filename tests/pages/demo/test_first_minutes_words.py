"""Issue 37, items 3-5 on the demo through the real websocket and the offline model: people read titles, never internal
names; an approval says what it will do (the stream's name read as the user) or lists labelled fields."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import RequestFactory
from django.utils import translation
from django.utils.translation import gettext

from chat.agent.types import ToolContext
from chat.events import ToolApprovalEvent
from chat.events.base import Envelope
from chat.templatetags.chat_tags import tray_config
from pages.demo.models import ResearchStream
from pages.demo.streams_list import rename_described
from tests.conftest import ws_connect
from tests.protocol import check_wire
from tools.registry import registry as tools

pytestmark = pytest.mark.django_db(transaction=True)
SNAKE = re.compile(r"\b[a-z]+_[a-z_]+\b")  # how an internal name looks: search_articles, streams_list, rename_stream


async def _until(ws: Any, kind: str) -> dict[str, Any]:
    while (event := await ws.recv())["type"] != kind:
        pass
    return event


def test_the_rename_sentence_names_only_a_stream_the_user_can_see(user: Any, other_user: Any) -> None:
    mine = ResearchStream.objects.create(owner=user, name="Lung Cancer Immunotherapy Monitor")
    theirs = ResearchStream.objects.create(owner=other_user, name="Someone Else's Secret Stream")
    ctx = ToolContext(user=user)
    assert rename_described({"stream_id": mine.pk, "new_name": "Oncology  Radar"}, ctx) == \
        "Rename “Lung Cancer Immunotherapy Monitor” to “Oncology Radar”?"
    # a stream of someone else's is never named: no sentence, so the approval shows the fields instead
    assert rename_described({"stream_id": theirs.pk, "new_name": "Mine now"}, ctx) is None
    summary, fields = tools.get("rename_stream").approval_words({"stream_id": theirs.pk, "new_name": "Mine now"}, ctx)
    assert summary is None and "Secret" not in str(fields)
    assert fields == [{"label": "Stream", "value": str(theirs.pk)}, {"label": "New name", "value": "Mine now"}]
    assert rename_described({"stream_id": "not a number", "new_name": "x"}, ctx) is None
    with translation.override("de"):
        said = rename_described({"stream_id": mine.pk, "new_name": "Onkologie-Radar"}, ctx)
    assert said is not None and "Lung Cancer Immunotherapy Monitor" in said and not said.startswith("Rename")


async def test_an_approval_says_what_it_will_do_with_the_tools_title(user: Any) -> None:
    stream = await ResearchStream.objects.acreate(owner=user, name="Lung Cancer Immunotherapy Monitor")
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat(f"Rename stream {stream.pk} to Oncology Radar", context={"current_page": "streams_list"})
    start = await _until(ws, "tool_start")
    ask = await _until(ws, "tool_approval")  # every frame is checked against the published schema by ws.recv
    assert start["tool"] == ask["tool"] == "rename_stream" and start["title"] == ask["title"] == "Rename stream"
    assert ask["summary"] == "Rename “Lung Cancer Immunotherapy Monitor” to “Oncology Radar”?"
    assert ask["fields"] == [{"label": "Stream", "value": str(stream.pk)}, {"label": "New name", "value": "Oncology Radar"}]
    await ws.send({"type": "chat.approve", "run_id": ask["run_id"], "tool_use_id": ask["tool_use_id"], "approved": False})
    events = await ws.until_terminal()
    payload = events[-1]["payload"]
    assert payload["tool_history"][0]["tool_name"] == "rename_stream" and payload["tool_history"][0]["title"] == "Rename stream"
    # the offline model's own words name the tool by its title
    words = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert "“Rename stream”" in words and not SNAKE.findall(words)
    await ws.close()


async def test_an_approval_in_german_has_the_german_title_and_sentence(user: Any) -> None:
    stream = await ResearchStream.objects.acreate(owner=user, name="Lung Cancer Immunotherapy Monitor")
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat(f"Rename stream {stream.pk} to Oncology Radar", context={"current_page": "streams_list"}, language="de")
    ask = await _until(ws, "tool_approval")
    assert ask["title"] == "Strom umbenennen"
    assert ask["summary"] == "„Lung Cancer Immunotherapy Monitor“ in „Oncology Radar“ umbenennen?"
    assert ask["fields"] == [{"label": "Strom", "value": str(stream.pk)}, {"label": "Neuer Name", "value": "Oncology Radar"}]
    await ws.send({"type": "chat.approve", "run_id": ask["run_id"], "tool_use_id": ask["tool_use_id"], "approved": False})
    await ws.until_terminal()
    await ws.close()


async def test_a_tool_turn_says_the_tools_title(user: Any, corpus: int) -> None:
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("search articles about CRISPR gene editing", context={"current_page": "reports"})
    events = await ws.until_terminal()
    start = next(e for e in events if e["type"] == "tool_start")
    assert start["tool"] == "search_articles" and start["title"] == "Search articles"
    words = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert "Let me use “Search articles” for that." in words and "search_articles" not in words
    assert events[-1]["payload"]["tool_history"][0]["title"] == "Search articles"
    assert events[-1]["payload"]["custom_payload"]["title"] == "Search results"
    await ws.close()


async def test_the_offline_model_names_the_page_by_its_title(user: Any) -> None:
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("What can you do here?", context={"current_page": "streams_list"})
    words = (await ws.until_terminal())[-1]["payload"]["message"]
    assert "on the **Research streams** page" in words and "streams list" not in words and not SNAKE.findall(words)
    await ws.close()


def test_an_approval_frame_with_its_additions_validates_against_the_published_schema() -> None:
    env = Envelope("run_1", 7)
    wire = ToolApprovalEvent.wire(env, 3, tool="rename_stream", input={"stream_id": 1, "new_name": "X"}, tool_use_id="toolu_1",
                                  title="Rename stream", summary="Rename “A” to “X”?",
                                  fields=[{"label": "Stream id", "value": "1"}, {"label": "New name", "value": "X"}])
    assert check_wire(wire)["fields"][1] == {"label": "New name", "value": "X"}
    # without them (a server before the additions), the same event is still valid and has none of the new keys
    bare = check_wire(ToolApprovalEvent.wire(env, 4, tool="t", input={}, tool_use_id="toolu_2"))
    assert not {"title", "summary", "fields"} & set(bare)
    with pytest.raises(ValueError):  # a field is a label and a text value, nothing else
        ToolApprovalEvent.wire(env, 5, tool="t", input={}, tool_use_id="toolu_3", fields=[{"label": "a", "value": "b", "html": "<b>"}])


@pytest.mark.parametrize(("page", "title", "german"), [
    ("home", "Home", "Start"), ("streams_list", "Research streams", "Forschungsströme"),
    ("new_stream", "New research stream", "Neuer Forschungsstrom"), ("edit_research_stream", "Stream settings", "Einstellungen des Stroms"),
    ("reports", "Reports", "Berichte"),
])
def test_every_demo_page_has_a_title_and_three_or_four_starters(user: Any, page: str, title: str, german: str) -> None:
    request = RequestFactory().get("/")
    request.user = user
    config = tray_config(request, user, page, {"stream_id": 1, "active_tab": "semantic"})
    assert config["page_title"] == title
    assert 3 <= len(config["starters"]) <= 4 and not any(SNAKE.search(s) for s in config["starters"])
    assert config["page_titles"]["streams_list"] == "Research streams"
    with translation.override("de"):
        german_config = tray_config(request, user, page, {"stream_id": 1, "active_tab": "semantic"})
    assert german_config["page_title"] == german and german_config["page_titles"]["streams_list"] == "Forschungsströme"
    assert len(german_config["starters"]) == len(config["starters"]) and not set(german_config["starters"]) & set(config["starters"])


@pytest.mark.parametrize("lang", ["en", "de", "es", "fr"])
def test_the_tray_config_labels_the_input_of_the_tools_the_page_offers(user: Any, other_user: Any, lang: str) -> None:
    """`tool_fields`: tool name -> {key: label} in the page's language, the labels a tool card shows its call's input
    with (as an approval does); every tool this user may use, because a conversation's earlier cards come from the
    tools of the pages it passed through."""
    request = RequestFactory().get("/")
    with translation.override(lang):
        config = tray_config(request, user, "edit_research_stream", {"stream_id": 1, "active_tab": "retrieval"})
        fields = config["tool_fields"]
        assert fields["rename_stream"] == {"stream_id": gettext("Stream"), "new_name": gettext("New name")}
        assert set(fields["preview_query"]) == {"query", "limit"} and "calculate" in fields  # the tab's tool, a global one
        assert set(fields["search_articles"]) == {"query", "limit"}  # another page's tool: a card made there is shown here
        assert fields["search_articles"]["query"] == gettext("Query")
        if lang != "en":
            assert fields["rename_stream"]["stream_id"] != "Stream"
        withheld = tray_config(request, other_user, "streams_list", None)["tool_fields"]
    assert "rename_stream" not in withheld  # a user without the permission may not rename: its tool's labels are not sent


def test_an_unregistered_page_has_no_title_and_general_starters() -> None:
    config = tray_config(None, AnonymousUser(), "nowhere_page", None)
    assert config["page_title"] == "" and config["starters"] == ["What can you do here?", "Summarize this page"]
