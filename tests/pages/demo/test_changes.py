"""What changed reaches the client: an approved tool's `tool_complete.changes` and a server action's
`action_result.changes` (the tray turns each into a `pagechat:changed` event for the page beside it)."""
from __future__ import annotations

from typing import Any

import pytest

from chat.events import changes_clean
from pages.demo.models import Report, ResearchStream
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


async def _until(ws: Any, kind: str) -> dict[str, Any]:
    while (event := await ws.recv())["type"] != kind:
        pass
    return event


async def test_an_approved_rename_says_what_it_changed(user: Any) -> None:
    stream = await ResearchStream.objects.acreate(owner=user, name="Lung Cancer Immunotherapy Monitor", purpose="lungs")
    ws, _ = await ws_connect(user)
    assert ws is not None
    ctx = {"current_page": "streams_list"}
    await ws.chat(f"Rename stream {stream.pk} to Oncology Radar", context=ctx)
    ask = await _until(ws, "tool_approval")
    assert ask["tool"] == "rename_stream"
    await ws.send({"type": "chat.approve", "run_id": ask["run_id"], "tool_use_id": ask["tool_use_id"], "approved": True})
    done = await _until(ws, "tool_complete")
    assert done["changes"] == [{"entity": "research_stream", "id": stream.pk, "kind": "updated", "fields": {"name": "Oncology Radar"}}]
    assert (await ws.until_terminal())[-1]["type"] == "complete"
    await stream.arefresh_from_db()
    assert stream.name == "Oncology Radar"

    # denied: the tool never ran, so its tool_complete says nothing changed (the field is absent)
    await ws.chat(f"Rename stream {stream.pk} to Gene Editing Denied", context=ctx, conversation_id=done["conversation_id"])
    ask = await _until(ws, "tool_approval")
    await ws.send({"type": "chat.approve", "run_id": ask["run_id"], "tool_use_id": ask["tool_use_id"], "approved": False})
    denied = await _until(ws, "tool_complete")
    assert "changes" not in denied
    await ws.until_terminal()
    await ws.close()


async def test_a_server_action_says_what_it_created(user: Any, corpus: int) -> None:
    """Create a stream, then "Run test report" from its answer: each action_result names the record it made."""
    ws, _ = await ws_connect(user)
    assert ws is not None
    ctx = {"current_page": "home"}
    await ws.chat("Help me create a research stream", context=ctx)
    conv = (await ws.until_terminal())[-1]["payload"]["conversation_id"]
    await ws.chat("oncology research", context=ctx, conversation_id=conv, interaction_type="value_selected")
    form = (await ws.until_terminal())[-1]["payload"]

    async def click(payload: dict[str, Any], action: str) -> dict[str, Any]:
        button = next(a for a in payload["suggested_actions"] if a["action"] == action)
        meta = {"action_identifier": action, "action_data": button["data"], "token": button["token"]}
        await ws.chat(button["label"], context=ctx, conversation_id=conv, interaction_type="action_executed", action_metadata=meta)
        return (await ws.until_terminal())[-1]["payload"]

    created = await click(form, "create_stream")
    stream = await ResearchStream.objects.aget(owner=user)
    assert created["action_result"]["changes"] == [
        {"entity": "research_stream", "id": stream.pk, "kind": "created", "fields": {"name": stream.name}}]
    reported = await click(created, "run_test_report")
    report = await Report.objects.aget(stream=stream)
    assert reported["action_result"] == {"action": "run_test_report", "status": "succeeded", "refresh": False, "changes": [
        {"entity": "report", "id": report.pk, "kind": "created", "fields": {"title": report.title, "stream_id": stream.pk}}]}
    await ws.close()


def test_changes_a_tool_declares_wrongly_are_left_out() -> None:
    """A malformed change is dropped (the page misses that one update), never a failed turn or an invalid frame."""
    good = {"entity": "research_stream", "id": 3, "kind": "deleted"}
    assert changes_clean([good, {"entity": "", "id": 1, "kind": "updated"}, {"entity": "x", "id": 1, "kind": "renamed"},
                          {"entity": "x", "kind": "updated"}, "not a change", {**good, "extra": 1}]) == [good]
    assert changes_clean(None) == [] and changes_clean({"entity": "x"}) == []
    assert len(changes_clean([good] * 500)) == 50
