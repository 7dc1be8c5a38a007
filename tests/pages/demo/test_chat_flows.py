"""The demo's page flows end to end through the websocket, driven by the offline model."""
from __future__ import annotations

from typing import Any

import pytest

from chat.models import Run
from pages.demo.models import ResearchStream
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


def stream_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "text_delta")


async def test_home_create_stream_flow(user: Any) -> None:
    ws, _ = await ws_connect(user)
    ctx = {"current_page": "home"}
    await ws.chat("Help me create a research stream", context=ctx)
    first = (await ws.until_terminal())[-1]["payload"]
    assert [v["label"] for v in first["suggested_values"]] == ["Oncology", "Cardiology", "Neurology", "Immunology"]
    conv = first["conversation_id"]

    await ws.chat("oncology research", context=ctx, conversation_id=conv, interaction_type="value_selected")
    events = await ws.until_terminal()
    second = events[-1]["payload"]
    assert "RESEARCH_STREAM_FORM" not in stream_text(events) and "SUGGESTED_ACTIONS" not in stream_text(events)
    assert second["message"] == stream_text(events)
    form = second["custom_payload"]
    assert form["type"] == "research_stream_form" and form["data"]["stream_name"] == "Oncology Intelligence"
    assert form["payload_id"] and form["summary"].startswith("Stream form: Oncology Intelligence")
    create = next(a for a in second["suggested_actions"] if a["action"] == "create_stream")
    assert create["handler"] == "server" and create["token"] and create["data"] == form["data"]

    meta = {"action_identifier": "create_stream", "action_data": create["data"], "token": create["token"]}
    await ws.chat(create["label"], context=ctx, conversation_id=conv, interaction_type="action_executed", action_metadata=meta)
    done = (await ws.until_terminal())[-1]["payload"]
    stream = await ResearchStream.objects.aget(owner=user, name="Oncology Intelligence")
    assert await stream.channels.acount() == 2
    nav = next(a for a in done["suggested_actions"] if a["action"] == "navigate")
    assert nav["data"]["route"] == f"/research-streams/{stream.pk}/"
    assert done["action_result"] == {"action": "create_stream", "status": "succeeded", "refresh": True, "changes": [
        {"entity": "research_stream", "id": stream.pk, "kind": "created", "fields": {"name": "Oncology Intelligence"}}]}
    # the same button again: answered in the conversation, nothing created
    await ws.chat(create["label"], context=ctx, conversation_id=conv, interaction_type="action_executed", action_metadata=meta)
    again = (await ws.until_terminal())[-1]["payload"]
    assert "already used" in again["message"] and again["action_result"]["status"] == "rejected"
    assert await ResearchStream.objects.filter(owner=user).acount() == 1
    await ws.close()


async def test_reports_search_tool_streams_progress_and_payload(user: Any, corpus: int) -> None:
    ws, _ = await ws_connect(user)
    await ws.chat("search articles about CRISPR gene editing", context={"current_page": "reports"})
    events = await ws.until_terminal()
    types = [e["type"] for e in events]
    assert types.count("tool_progress") == 2
    start = next(e for e in events if e["type"] == "tool_start")
    assert start["tool"] == "search_articles" and "CRISPR" in start["input"]["query"]
    payload = events[-1]["payload"]
    assert payload["custom_payload"]["type"] == "search_results"
    articles = payload["custom_payload"]["data"]["articles"]
    assert articles and any("crispr" in (a["title"]).lower() for a in articles)
    # open one of them by id: the article card
    await ws.chat(f"show me article {articles[0]['external_id']}", context={"current_page": "reports"}, conversation_id=payload["conversation_id"])
    card = (await ws.until_terminal())[-1]["payload"]["custom_payload"]
    assert card["type"] == "pubmed_article" and card["data"]["external_id"] == articles[0]["external_id"]
    await ws.close()


async def test_edit_stream_tabs_resolve_their_own_tools_and_payloads(user: Any) -> None:
    stream = await ResearchStream.objects.acreate(owner=user, name="Heart Watch", purpose="cardio")
    ws, _ = await ws_connect(user)
    base = {"current_page": "edit_research_stream", "entity_type": "research_stream", "entity_id": stream.pk, "stream_id": stream.pk}
    await ws.chat("propose retrieval queries for immunotherapy", context={**base, "active_tab": "retrieval"})
    payload = (await ws.until_terminal())[-1]["payload"]
    assert payload["custom_payload"]["type"] == "retrieval_proposal"
    assert any("immunotherapy" in q for q in payload["custom_payload"]["data"]["queries"])
    run = await Run.objects.aget(pk=payload["run_id"])
    assert "preview_query" in run.diagnostics["tools"]
    assert "Heart Watch" in run.diagnostics["system_prompt"] and "RETRIEVAL tab" in run.diagnostics["system_prompt"]

    await ws.chat("propose a schema about immunotherapy", context={**base, "active_tab": "semantic"}, conversation_id=payload["conversation_id"])
    payload2 = (await ws.until_terminal())[-1]["payload"]
    assert payload2["custom_payload"]["type"] == "schema_proposal"
    run2 = await Run.objects.aget(pk=payload2["run_id"])
    assert "preview_query" not in run2.diagnostics["tools"]
    assert "PAYLOAD MANIFEST" in run2.diagnostics["system_prompt"] and payload["custom_payload"]["payload_id"] in run2.diagnostics["system_prompt"]
    await ws.close()


async def test_someone_elses_stream_id_in_context_is_not_read(user: Any, other_user: Any) -> None:
    secret = await ResearchStream.objects.acreate(owner=other_user, name="Bob Secret Stream", purpose="hidden purpose")
    ws, _ = await ws_connect(user)
    await ws.chat("hello", context={"current_page": "edit_research_stream", "stream_id": secret.pk, "active_tab": "semantic"})
    payload = (await ws.until_terminal())[-1]["payload"]
    run = await Run.objects.aget(pk=payload["run_id"])
    assert "Bob Secret Stream" not in run.diagnostics["system_prompt"] and "hidden purpose" not in run.diagnostics["system_prompt"]
    await ws.close()


async def test_home_answers_how_many_streams_from_the_users_own_facts(user: Any, other_user: Any) -> None:
    from asgiref.sync import sync_to_async

    @sync_to_async
    def streams() -> None:
        ResearchStream.objects.create(owner=user, name="CRISPR Therapeutics Watch", report_frequency="biweekly")
        ResearchStream.objects.create(owner=other_user, name="Someone Else's Stream")

    await streams()
    ws, _ = await ws_connect(user)
    await ws.chat("how many streams do I have?", context={"current_page": "home"})
    done = (await ws.until_terminal())[-1]["payload"]
    assert "**Research streams:** 1 (the latest: CRISPR Therapeutics Watch (biweekly))" in done["message"]
    assert "Someone Else" not in done["message"]


async def test_reports_page_answers_from_the_users_own_reports(user: Any, other_user: Any) -> None:
    from asgiref.sync import sync_to_async

    from pages.demo.models import Report

    @sync_to_async
    def reports() -> int:
        mine = ResearchStream.objects.create(owner=user, name="Mine")
        theirs = ResearchStream.objects.create(owner=other_user, name="Theirs")
        Report.objects.create(stream=theirs, title="Their digest")
        Report.objects.create(stream=mine, title="Older digest")
        return Report.objects.create(stream=mine, title="Weekly digest", summary="EGFR resistance, in short.").pk

    report_id = await reports()
    ws, _ = await ws_connect(user)
    await ws.chat("what reports do I have?", context={"current_page": "reports"})
    listed = (await ws.until_terminal())[-1]["payload"]["message"]
    assert listed.startswith("- **Report:** Weekly digest (stream Mine, ") and "- **Report:** Older digest" in listed
    assert "Their digest" not in listed
    await ws.chat("how many articles?", context={"current_page": "reports", "report_id": report_id})
    detail = (await ws.until_terminal())[-1]["payload"]["message"]
    assert detail.startswith("On **Weekly digest (id ") and "- **Articles:** 0" in detail
