"""Browser tests of the tray against the scripted fake protocol server: a tool that asks for approval: its card, Approve and Deny on the wire.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


def test_tool_approval_card(page: Page, server: FakeProtocolServer) -> None:
    decisions: list[bool] = []

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.emit("tool_approval", tool="delete_report", input={"report_id": 7}, tool_use_id="toolu_9")
        decisions.append(await run.wait_approval("toolu_9"))
        run.emit("tool_start", tool="delete_report", input={"report_id": 7}, tool_use_id="toolu_9")
        run.emit("tool_complete", tool="delete_report", index=0)
        run.complete(message="Deleted.", message_html="<p>Deleted.</p>")

    server.script = script
    open_tray(page, server)
    send(page, "delete report 7")
    card = page.get_by_role("group", name="Approval needed: delete_report")
    # a server that sends no `fields` (and no title): the input is still a labelled list, never JSON
    expect(card.locator("dt")).to_have_text(["Report id"])
    expect(card.locator("dd")).to_have_text(["7"])
    expect(card).not_to_contain_text('"report_id"')
    expect(page.locator(".chat-thinking")).to_be_hidden()
    shot(page, "12_tool_approval")
    card.get_by_role("button", name="Approve").click()
    expect(final_messages(page)).to_have_text("Deleted.")
    (approve,) = server.frames_of("chat.approve")
    assert approve == {"type": "chat.approve", "run_id": next(iter(server.runs)), "tool_use_id": "toolu_9", "approved": True}
    assert decisions == [True]
    assert_clean(page)
