"""The demo's server actions end to end through the websocket, offered by the offline model and clicked as the tray does."""
from __future__ import annotations

from typing import Any

import pytest

from chat.models import ActionStat
from pages.demo.models import Channel, Report, ResearchStream
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


async def ask(ws: Any, text: str, ctx: dict[str, Any], conv: int | None = None) -> dict[str, Any]:
    await ws.chat(text, context=ctx, conversation_id=conv)
    return (await ws.until_terminal())[-1]["payload"]


async def click(ws: Any, button: dict[str, Any], ctx: dict[str, Any], conv: int) -> dict[str, Any]:
    """What the tray sends for a server button: its label, action, data and signed token."""
    meta = {"action_identifier": button["action"], "action_data": button.get("data"), "token": button.get("token")}
    await ws.chat(button["label"], context=ctx, conversation_id=conv, interaction_type="action_executed", action_metadata=meta)
    events = await ws.until_terminal()
    assert events[-1]["type"] == "complete", events[-1]
    return events[-1]["payload"]


def button(payload: dict[str, Any], action: str) -> dict[str, Any]:
    found = [a for a in payload["suggested_actions"] if a["action"] == action]
    assert found, [a["action"] for a in payload["suggested_actions"]]
    assert found[0]["handler"] == "server" and found[0]["token"]
    return found[0]


@pytest.fixture
def stream(user: Any) -> ResearchStream:
    s = ResearchStream.objects.create(owner=user, name="Heart Watch", purpose="cardio", semantic={"topics": ["heart failure"]})
    Channel.objects.create(stream=s, name="Trials", type="clinical", keywords=["heart"])
    Report.objects.create(stream=s, title="Week 1")
    return s


def edit_ctx(stream: ResearchStream, tab: str) -> dict[str, Any]:
    return {"current_page": "edit_research_stream", "entity_type": "research_stream", "entity_id": stream.pk,
            "stream_id": stream.pk, "active_tab": tab}


async def test_update_config_saves_an_accepted_proposal(user: Any, stream: ResearchStream) -> None:
    ws, _ = await ws_connect(user)
    ctx = edit_ctx(stream, "semantic")
    proposal = await ask(ws, "propose a schema about tumor microenvironment", ctx)
    assert proposal["custom_payload"]["type"] == "schema_proposal"
    update = button(proposal, "update_config")
    assert not [a for a in proposal["suggested_actions"] if a["action"] == "delete_entity"]
    done = await click(ws, update, ctx, proposal["conversation_id"])
    assert done["action_result"] == {"action": "update_config", "status": "succeeded", "refresh": True,
                                     "changes": [{"entity": "research_stream", "id": stream.pk, "kind": "updated"}]}
    assert done["message"].startswith("✓ Saved the semantic space settings of **Heart Watch**")
    await stream.arefresh_from_db()
    assert stream.purpose == "Track advances in tumor microenvironment"
    assert stream.semantic["topics"] == ["tumor microenvironment", "tumor microenvironment biomarkers"]
    assert stream.name == "Heart Watch"  # not proposed: unchanged

    # retrieval tab: the queries proposal goes through the retrieval form (channels kept)
    ctx = edit_ctx(stream, "retrieval")
    proposal = await ask(ws, "propose retrieval queries for statins", ctx, proposal["conversation_id"])
    await click(ws, button(proposal, "update_config"), ctx, proposal["conversation_id"])
    await stream.arefresh_from_db()
    assert stream.retrieval["queries"] == ["statins AND clinical trial", "statins biomarker"]
    assert await stream.channels.acount() == 1
    stat = await ActionStat.objects.aget(page="edit_research_stream", action="update_config")
    assert (stat.offered, stat.clicked, stat.succeeded, stat.failed) == (2, 2, 2, 0)
    await ws.close()


async def test_delete_asks_to_confirm_then_deletes(user: Any, stream: ResearchStream) -> None:
    from django.contrib.auth.models import Permission

    # deleting streams needs the model's delete permission (a user without it is never offered the action)
    await user.user_permissions.aadd(await Permission.objects.aget(codename="delete_researchstream"))
    ws, _ = await ws_connect(user)
    ctx = edit_ctx(stream, "semantic")
    offer = await ask(ws, "please delete this stream", ctx)
    delete = button(offer, "delete_entity")
    assert delete["data"] == {"entity_type": "research_stream", "entity_id": stream.pk} and delete["style"] == "warning"
    conv = offer["conversation_id"]
    confirm = await click(ws, delete, ctx, conv)
    assert confirm["message"] == "Delete **Heart Watch** with its 1 channel and 1 report? This cannot be undone."
    assert confirm["action_result"] == {"action": "delete_entity", "status": "succeeded", "refresh": False}
    assert await ResearchStream.objects.filter(pk=stream.pk).aexists()  # not yet
    yes = button(confirm, "delete_entity")
    assert yes["data"]["confirmed"] is True and yes["label"] == "Yes, delete it"
    done = await click(ws, yes, ctx, conv)
    assert done["message"] == "✓ Deleted **Heart Watch**." and done["action_result"]["refresh"] is True
    assert not await ResearchStream.objects.filter(pk=stream.pk).aexists()
    assert not await Report.objects.filter(title="Week 1").aexists()
    # the confirmation again: used; the first button again: used too (and the stream is gone anyway)
    assert "already used" in (await click(ws, yes, ctx, conv))["message"]
    assert "already used" in (await click(ws, delete, ctx, conv))["message"]
    await ws.close()


async def test_a_failing_action_is_answered_and_rolled_back(user: Any, stream: ResearchStream) -> None:
    ws, _ = await ws_connect(user)
    ctx = edit_ctx(stream, "semantic")
    proposal = await ask(ws, "propose a schema about tumor microenvironment", ctx)
    update = button(proposal, "update_config")
    await stream.adelete()
    failed = await click(ws, update, ctx, proposal["conversation_id"])
    assert failed["message"] == "✗ This stream no longer exists (or is not yours). Nothing was changed."
    assert failed["action_result"] == {"action": "update_config", "status": "failed", "refresh": False}
    assert [a["action"] for a in failed["suggested_actions"]] == ["close"]
    stat = await ActionStat.objects.aget(page="edit_research_stream", action="update_config")
    assert (stat.clicked, stat.succeeded, stat.failed) == (1, 0, 1)
    await ws.close()


async def test_search_filters_execute_search_and_apply_filters(user: Any, stream: ResearchStream, corpus: int) -> None:
    await Report.objects.acreate(stream=stream, title="CRISPR digest")
    ws, _ = await ws_connect(user)
    ctx = {"current_page": "reports"}
    filters = await ask(ws, "filter criteria for CRISPR", ctx)
    assert filters["custom_payload"]["type"] == "search_filters"
    assert filters["custom_payload"]["data"] == {"query": "CRISPR", "topic": None, "year_from": 2022, "year_to": None,
                                                 "journal": None, "stream_id": None}
    conv = filters["conversation_id"]
    found = await click(ws, button(filters, "execute_search"), ctx, conv)
    results = found["custom_payload"]
    assert results["type"] == "search_results" and results["data"]["articles"]
    assert all(a["published"] >= "2022" for a in results["data"]["articles"])
    assert found["message"].startswith(f"Found {results['data']['total']} articles matching your criteria")
    applied = await click(ws, button(filters, "apply_filters"), ctx, conv)
    data = applied["custom_payload"]["data"]
    assert applied["custom_payload"]["type"] == "search_filters" and data["applied"] is True
    assert data["route"] == "/reports/?q=CRISPR&year_from=2022" and data["count"] == 1
    assert applied["action_result"] == {"action": "apply_filters", "status": "succeeded", "refresh": True}
    await ws.close()


async def test_validate_form_reports_problems_and_changes_nothing(user: Any, stream: ResearchStream) -> None:
    await ResearchStream.objects.acreate(owner=user, name="immunotherapy monitor")
    ws, _ = await ws_connect(user)
    ctx = {"current_page": "new_stream", "entity_type": "research_stream"}
    template = await ask(ws, "give me a stream template about immunotherapy", ctx)
    validate = button(template, "validate_form")
    checked = await click(ws, validate, ctx, template["conversation_id"])
    result = checked["custom_payload"]
    assert result["type"] == "validation_results"
    assert result["data"] == {"valid": True, "errors": [], "warnings": ["You already have a stream called “Immunotherapy Monitor”."],
                              "suggestions": []}
    assert checked["message"] == "✓ The proposal passes the form's checks. 1 warning, 0 suggestions."
    assert await ResearchStream.objects.filter(owner=user).acount() == 2
    await ws.close()


def test_validate_form_errors_come_from_the_page_form(user: Any) -> None:
    from pages.demo.new_stream import validate_form

    result = validate_form({"stream_name": "", "report_frequency": "hourly", "topics": ["x" * 400]}, user, {})
    data = result.payload["data"] if result.payload else {}
    assert data["valid"] is False
    assert [e.split(":")[0] for e in data["errors"]] == ["Stream name", "Report frequency", "Topics"]
    assert data["suggestions"] == ["Add at least 3 specific topics (it has 1)."]
