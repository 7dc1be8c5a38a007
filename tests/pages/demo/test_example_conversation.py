"""The specs' example conversation over the websocket with the offline model: area chips -> form with refinement
chips -> name suggestions -> renamed form -> create -> "Run test report" (a signed server action that really
searches the corpus with the stream's queries and saves a report). Every frame is checked against the schema."""
from __future__ import annotations

from typing import Any

import pytest

from chat.models import Run
from pages.demo.models import Report, ResearchStream
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)
HOME = {"current_page": "home"}


async def turn(ws: Any, message: str, conv: int | None = None, **fields: Any) -> dict[str, Any]:
    await ws.chat(message, context=fields.pop("context", HOME), conversation_id=conv, **fields)
    events = await ws.until_terminal()
    assert events[-1]["type"] == "complete", events[-1]
    return events[-1]["payload"]


def chip(payload: dict[str, Any], label: str) -> str:
    return next(v["value"] for v in payload["suggested_values"] if v["label"] == label)


def button(payload: dict[str, Any], action: str) -> dict[str, Any]:
    return next(a for a in payload["suggested_actions"] if a["action"] == action)


async def click(ws: Any, payload: dict[str, Any], action: str, **fields: Any) -> dict[str, Any]:
    b = button(payload, action)
    meta = {"action_identifier": b["action"], "action_data": b.get("data") or {}, "token": b["token"]}
    return await turn(ws, b["label"], payload["conversation_id"], interaction_type="action_executed", action_metadata=meta, **fields)


async def test_example_conversation_chips_form_refine_create_test_report(user: Any, corpus: int) -> None:
    ws, _ = await ws_connect(user)
    first = await turn(ws, "Help me create a research stream")
    conv = first["conversation_id"]
    assert [v["label"] for v in first["suggested_values"]] == ["Oncology", "Cardiology", "Neurology", "Immunology"]
    assert first["custom_payload"] is None

    form = await turn(ws, chip(first, "Oncology"), conv, interaction_type="value_selected")
    assert form["custom_payload"]["type"] == "research_stream_form"
    assert [v["label"] for v in form["suggested_values"]] == ["Change name", "Add more channels", "Different frequency"]

    names = await turn(ws, chip(form, "Change name"), conv, interaction_type="value_selected")
    assert names["custom_payload"] is None and names["message"].startswith("What would you like to name the stream?")
    assert [v["label"] for v in names["suggested_values"]][-1] == "Let me type it"
    new_name = names["suggested_values"][0]["value"]

    renamed = await turn(ws, new_name, conv, interaction_type="value_selected")
    assert renamed["custom_payload"]["data"]["stream_name"] == new_name
    assert button(renamed, "create_stream")["data"]["stream_name"] == new_name

    created = await click(ws, renamed, "create_stream")
    stream = await ResearchStream.objects.aget(owner=user, name=new_name)
    assert "Success" in created["message"] and new_name in created["message"]
    assert [a["label"] for a in created["suggested_actions"]] == ["View stream", "Run test report", "Create another", "Close"]
    run_report = button(created, "run_test_report")
    assert run_report["handler"] == "server" and run_report["token"] and run_report["data"] == {"stream_id": stream.pk}

    report_turn = await click(ws, created, "run_test_report")
    report = await Report.objects.select_related("stream").aget(stream=stream)
    count = await report.articles.acount()
    assert count > 0 and report.title == f"Test report: {new_name}"
    assert f"{count} articles" in report_turn["message"]
    card = report_turn["custom_payload"]
    assert card["type"] == "search_results" and len(card["data"]["articles"]) == count
    # the stream's channels' keywords were the queries: every article is about oncology
    assert "oncology" in card["data"]["query"]
    assert button(report_turn, "navigate")["data"]["route"] == f"/reports/{report.pk}/"

    # single use: the same click again is refused and makes no second report
    b = button(created, "run_test_report")
    await ws.chat(b["label"], context=HOME, conversation_id=conv, interaction_type="action_executed",
                  action_metadata={"action_identifier": b["action"], "action_data": b["data"], "token": b["token"]})
    again = (await ws.until_terminal())[-1]  # answered in the conversation (or refused), never run again
    assert again["type"] == "error" or again["payload"].get("action_result", {}).get("status") != "succeeded"
    assert await Report.objects.filter(stream=stream).acount() == 1
    await ws.close()


async def test_test_report_of_someone_elses_stream_is_refused_in_the_conversation(user: Any, other_user: Any, corpus: int) -> None:
    from pages.demo.report_run import report_test_run

    theirs = await ResearchStream.objects.acreate(owner=other_user, name="Private", retrieval={"queries": ["CRISPR"]})
    from asgiref.sync import sync_to_async

    result = await sync_to_async(report_test_run)({"stream_id": theirs.pk}, user, HOME)
    assert "no longer exists" in result.message and await Report.objects.acount() == 0


async def test_error_context_gets_a_troubleshooting_answer_and_prompt_section(staff_user: Any) -> None:
    ws, _ = await ws_connect(staff_user)
    error = {"message": "Failed to save: report_frequency must be one of daily, weekly", "code": "validation_error",
             "context": {"field": "report_frequency"}}
    payload = await turn(ws, "what went wrong?", context={**HOME, "error": error})
    assert "report_frequency must be one of daily, weekly" in payload["message"] and "`validation_error`" in payload["message"]
    assert "fix the value" in payload["message"]
    run = await Run.objects.aget(pk=payload["run_id"])
    assert "# TROUBLESHOOTING" in run.diagnostics["system_prompt"]
    # the run records the model that answered, not the configured Anthropic model; staff see the label in diagnostics
    assert run.model == "pagechat-offline" and run.diagnostics["model"] == "pagechat-offline"
    assert payload["diagnostics"]["provider_label"] == "Offline model"
    await ws.close()


async def test_question_on_the_stream_page_is_answered_from_the_database(user: Any) -> None:
    stream = await ResearchStream.objects.acreate(owner=user, name="Heart Watch", purpose="Follow SGLT2 inhibitors in heart failure",
                                                  semantic={"topics": ["SGLT2 inhibitors"], "entities": [], "scope": ""})
    ws, _ = await ws_connect(user)
    ctx = {"current_page": "edit_research_stream", "entity_type": "research_stream", "entity_id": stream.pk,
           "stream_id": stream.pk, "active_tab": "semantic"}
    payload = await turn(ws, "What is this stream about?", context=ctx)
    assert "Heart Watch" in payload["message"] and "Follow SGLT2 inhibitors in heart failure" in payload["message"]
    assert payload["custom_payload"] is None
    await ws.close()
