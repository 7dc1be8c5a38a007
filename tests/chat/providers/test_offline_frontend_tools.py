"""The offline model calls a tab's frontend tool when the person's words name it, as it does a server tool, and asks
for a required argument the words do not give: a choice as chips, a text by its name."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import WS, ws_connect

SWITCH = {"name": "switch_tab", "title": "Switch tab", "description": "Switch the page to another tab of the stream's settings.",
          "parameters": {"type": "object", "properties": {"tab": {"type": "string", "enum": ["semantic", "retrieval", "presentation"]}},
                         "required": ["tab"]}}
FILL = {"name": "fill_field", "title": "Fill a field", "description": "Fill in one field of the stream's settings form with a value.",
        "parameters": {"type": "object", "properties": {"field": {"type": "string", "enum": ["name", "description"]}, "value": {"type": "string"}},
                       "required": ["field", "value"]}}


async def turn(ws: WS, message: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The turn's events and the calls the tab was asked to run (each answered "done")."""
    await ws.send({"type": "chat.send", "client_message_id": str(uuid.uuid4()), "message": message, "tab_id": "t",
                   "client_tools": [SWITCH, FILL], "context": {"current_page": "edit_stream", "stream_id": 1, "tab": "semantic"}})
    events, calls = [], []
    while (ev := await ws.recv())["type"] not in ("complete", "error", "cancelled"):
        events.append(ev)
        if ev["type"] == "client_tool_call":
            calls.append(ev)
            await ws.send({"type": "chat.tool_result", "run_id": ev["run_id"], "tool_use_id": ev["tool_use_id"], "tab_id": "t", "output": "done"})
    return [*events, ev], calls


@pytest.mark.django_db(transaction=True)
async def test_named_tools_are_called_and_missing_arguments_asked_for(user: Any, settings: Any) -> None:
    settings.CHAT_PROVIDER = "offline"
    ws, _ = await ws_connect(user)
    assert ws is not None
    events, calls = await turn(ws, "Switch to the presentation tab")
    assert [(c["tool"], c["input"]) for c in calls] == [("switch_tab", {"tab": "presentation"})]
    assert events[-1]["type"] == "complete" and "switch_tab" not in events[-1]["payload"]["message"]  # people read its title
    events, calls = await turn(ws, "Fill the description field with Weekly oncology news")
    assert [(c["tool"], c["input"]) for c in calls] == [("fill_field", {"field": "description", "value": "Weekly oncology news"})]
    events, calls = await turn(ws, "Switch tab")  # which tab? asked, with the tabs as chips
    payload = events[-1]["payload"]
    assert not calls and "Which tab" in payload["message"]
    assert [v["label"] for v in payload["suggested_values"]] == ["Semantic", "Retrieval", "Presentation"]
    events, calls = await turn(ws, payload["suggested_values"][2]["value"])  # the chip
    assert [(c["tool"], c["input"]) for c in calls] == [("switch_tab", {"tab": "presentation"})]
    events, calls = await turn(ws, "Fill a field: Description")  # the value is missing: asked for by its name
    assert not calls and events[-1]["payload"]["message"] == "What should “Fill a field” use as value?"
    await ws.close()
