"""Browser tests of the tray against the scripted fake protocol server: the composer: the welcome, keyboard and focus, the frame a send puts on the wire, the unsent draft.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import UUID4, assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


def test_welcome_offline_note_focus_and_escape(page: Page, server: FakeProtocolServer) -> None:
    server.extra_config["page_title"] = "Reports"  # as the chat_tray tag names the page
    try:
        open_tray(page, server, "offline=1")
    finally:
        server.extra_config.pop("page_title")
    expect(page.get_by_label("Message")).to_be_focused()
    expect(page.locator(".chat-welcome")).to_contain_text("Reports page")
    badge = page.locator(".chat-badge--offline")  # the provider is named once, in the header
    expect(badge).to_have_text("Offline model")
    expect(badge).to_have_attribute("title", "Deterministic demo model — no API key configured")
    log = page.locator(".chat-log")
    expect(log).to_have_attribute("role", "log")
    expect(log).to_have_attribute("aria-live", "polite")
    shot(page, "01_welcome_offline")
    page.keyboard.press("Escape")
    expect(page.locator(".chat-tray")).to_be_hidden()
    expect(page.get_by_role("button", name="Open chat")).to_be_focused()
    assert_clean(page)


def test_enter_sends_shift_enter_newline_and_frame_shape(page: Page, server: FakeProtocolServer) -> None:
    open_tray(page, server)
    box = page.get_by_label("Message")
    box.type("line one")
    box.press("Shift+Enter")
    box.type("line two")
    assert box.input_value() == "line one\nline two"
    box.press("Enter")
    expect(final_messages(page)).to_contain_text("You said: line one\nline two")
    (frame,) = server.frames_of("chat.send")
    assert UUID4.match(frame["client_message_id"])
    assert frame["conversation_id"] is None
    assert frame["interaction_type"] == "text_input"
    # Config context + page script's setContext + current_page.
    assert frame["context"] == {"report_id": 7, "current_page": "reports", "active_tab": "semantic"}
    assert "action_metadata" not in frame
    # The second message continues the conversation the server created.
    send(page, "again")
    expect(final_messages(page)).to_have_count(2)
    second = server.frames_of("chat.send")[1]
    assert second["conversation_id"] == next(iter(server.conversations))
    assert_clean(page)

def test_an_unsent_draft_survives_navigation_but_not_sending_or_another_user(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("Noted.")
        run.complete(message_html="<p>Noted.</p>")

    server.script = script
    open_tray(page, server)
    box = page.get_by_label("Message")
    box.fill("half of a long question,\nstill being written")
    page.goto(f"{server.http_url}/reports/")  # a link on the page: a new document in the same tab
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(box).to_have_value("half of a long question,\nstill being written")
    assert page.evaluate("document.querySelector('.chat-input').offsetHeight") > 30  # sized to its two lines
    box.press("End")
    box.type(" and done")
    box.press("Enter")
    assert server.wait_for_frame("chat.send")[0]["message"] == "half of a long question,\nstill being written and done"
    expect(final_messages(page)).to_have_count(1)
    page.reload()
    expect(final_messages(page)).to_have_count(1)
    expect(box).to_have_value("")  # sent: no longer a draft
    # a draft is its writer's: the next user signed in on this tab neither sees it nor gets it back later
    box.fill("alice's private draft")
    page.goto(f"{server.http_url}/?user=bob")
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(box).to_have_value("")
    page.goto(f"{server.http_url}/?user=alice")
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(box).to_have_value("")
    assert "private draft" not in page.evaluate("JSON.stringify(sessionStorage)")
    assert_clean(page)
