"""Browser tests of the tray against the scripted fake protocol server: a full streamed turn: thinking, progress, tool cards, chips; client and server actions; navigation mid-conversation.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


async def tool_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    await run.gate("thinking")
    await run.stream_text("Let me search for <b>CRISPR</b> papers.\n\n")
    run.emit("tool_start", tool="search_articles", input={"query": "CRISPR"}, tool_use_id="toolu_1")
    run.emit("tool_progress", tool="search_articles", stage="searching", message="Found 15 candidates…", progress=0.5, data=None)
    await run.gate("progress")
    run.emit("tool_complete", tool="search_articles", index=0)
    run.emit("text_delta", text="[[tool:0]]")
    await run.stream_text("\n\nI found **2** articles.")
    await run.gate("streamed")
    run.complete(
        message="Let me search for <b>CRISPR</b> papers.\n\n[[tool:0]]\n\nI found **2** articles.",
        message_html=(
            "<p>Let me search for &lt;b&gt;CRISPR&lt;/b&gt; papers.</p>"
            '<div class="tool-slot" data-tool-index="0"></div>'
            "<p>I found <strong>2</strong> articles. <a href=\"/articles/1/\">First</a></p>"
        ),
        tool_history=[{"tool_name": "search_articles", "input": {"query": "CRISPR"}, "output": "Found 2 articles: A, B"}],
        suggested_values=[{"label": "Tell me more", "value": "tell me more about the first"}],
        suggested_actions=[
            {"label": "Highlight", "action": "highlight", "handler": "client", "data": {"selector": "#target"}, "style": "primary"},
            {"label": "Save search", "action": "save_search", "handler": "server", "data": {"q": "CRISPR"}, "style": "warning", "token": "signed-token"},
        ],
    )


def test_streamed_turn_thinking_progress_tool_cards_chips(page: Page, server: FakeProtocolServer) -> None:
    server.script = tool_turn
    open_tray(page, server)
    send(page, "find CRISPR papers")
    expect(page.locator(".chat-bubble--user")).to_have_text("find CRISPR papers")
    expect(page.locator(".chat-thinking")).to_be_visible()
    expect(page.get_by_role("button", name="Stop generating")).to_be_visible()
    shot(page, "02_thinking")
    server.open_gate("thinking")

    # Amber progress card while text is already streaming; model text shown literally (no HTML).
    progress = page.locator(".chat-progress")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("search_articles")
    expect(progress).to_contain_text("Found 15 candidates…")
    expect(progress.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "50")
    stream = page.locator(".chat-bubble--streaming")
    expect(stream).to_contain_text("Let me search for <b>CRISPR</b> papers.")
    assert stream.locator("b").count() == 0
    expect(page.locator(".chat-thinking")).to_be_hidden()
    shot(page, "03_tool_progress_while_streaming")
    server.open_gate("progress")

    # Marker becomes a placeholder while streaming; progress card gone after tool_complete.
    expect(page.locator(".chat-tool-placeholder")).to_contain_text("search_articles")
    expect(progress).to_have_count(0)
    expect(stream).to_contain_text("I found 2 articles.")
    expect(stream.locator("strong")).to_have_text("2")
    assert "[[tool" not in stream.inner_text()
    server.open_gate("streamed")

    # Final message: server HTML with an inline collapsible tool card.
    final = final_messages(page).last
    expect(final.locator("strong")).to_have_text("2")
    expect(final).to_contain_text("Let me search for <b>CRISPR</b> papers.")
    expect(page.locator(".chat-bubble--streaming")).to_have_count(0)
    card = final.locator(".chat-tool-card")
    toggle = card.get_by_role("button", name="search_articles")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(card.locator(".chat-tool-card__body")).to_be_hidden()
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    # its input as labelled fields (no tool_fields in this config: the key in words), never JSON: not staff here
    expect(card.locator(".chat-tool-card__fields dt")).to_have_text(["Query"])
    expect(card.locator(".chat-tool-card__fields dd")).to_have_text(["CRISPR"])
    expect(card.locator(".chat-tool-card__body")).not_to_contain_text('"query"')
    expect(card.locator(".chat-tool-card__raw")).to_have_count(0)
    expect(card.locator(".chat-tool-card__body")).to_contain_text("Found 2 articles: A, B")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    shot(page, "04_final_with_tool_card_chips_actions")

    # Chip -> value_selected with the value (not the label).
    page.get_by_role("button", name="Tell me more").click()
    server.wait_for_frame("chat.send", 2)
    chip_frame = server.frames_of("chat.send")[1]
    assert chip_frame["message"] == "tell me more about the first"
    assert chip_frame["interaction_type"] == "value_selected"
    assert_clean(page)


async def actions_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    if frame["interaction_type"] == "action_executed":
        await run.stream_text("Saved.")
        run.complete(message_html="<p>Saved.</p>")
        return
    run.complete(
        message="Pick one.",
        message_html="<p>Pick one.</p>",
        suggested_actions=[
            {"label": "Highlight", "action": "highlight", "handler": "client", "data": {"selector": "#target"}, "style": "primary"},
            {"label": "Copy", "action": "copy", "handler": "client", "data": {"text": "copied text"}, "style": "secondary"},
            {"label": "Evil nav", "action": "navigate", "handler": "client", "data": {"route": "https://evil.example/"}},
            {"label": "Mystery", "action": "no_such_action", "handler": "client", "data": {}},
            {"label": "Switch tab", "action": "switch_tab", "handler": "client", "data": {"tab": "retrieval"}},
            {"label": "Save search", "action": "save_search", "handler": "server", "data": {"q": "CRISPR"}, "style": "warning", "token": "signed-token"},
        ],
    )


def test_client_and_server_actions(page: Page, server: FakeProtocolServer) -> None:
    server.script = actions_turn
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.http_url)
    open_tray(page, server)
    send(page, "actions please")
    actions = page.get_by_role("group", name="Suggested actions")
    expect(actions.get_by_role("button")).to_have_count(6)
    expect(actions.get_by_role("button", name="Highlight")).to_have_class(re.compile("chat-btn--primary"))
    expect(actions.get_by_role("button", name="Save search")).to_have_class(re.compile("chat-btn--warning"))
    shot(page, "05_actions")

    actions.get_by_role("button", name="Highlight").click()
    expect(page.locator("#target")).to_have_class(re.compile("chat-highlight"))
    expect(page.locator("#target")).not_to_have_class(re.compile("chat-highlight"), timeout=5000)

    actions.get_by_role("button", name="Copy").click()
    expect(page.locator(".chat-notice")).to_have_text("Copied to clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == "copied text"

    url = page.url
    actions.get_by_role("button", name="Evil nav").click()
    expect(page.locator(".chat-notice")).to_have_text("Refusing to navigate outside this site.")
    assert page.url == url

    actions.get_by_role("button", name="Mystery").click()
    expect(page.locator(".chat-notice")).to_have_text("Unknown action: no_such_action")

    actions.get_by_role("button", name="Switch tab").click()
    expect(page.locator("#active-tab")).to_have_text("retrieval")
    assert page.evaluate("window.__actionCtx") == {"hasTray": True, "hasSend": True}

    actions.get_by_role("button", name="Save search").click()
    expect(final_messages(page).last).to_contain_text("Saved.")
    frame = server.frames_of("chat.send")[-1]
    assert frame["interaction_type"] == "action_executed"
    assert frame["message"] == "Save search"
    assert frame["action_metadata"] == {"action_identifier": "save_search", "action_data": {"q": "CRISPR"}, "token": "signed-token"}
    assert frame["context"]["active_tab"] == "retrieval"  # setContext from the page action
    assert_clean(page)


def test_navigate_keeps_conversation_and_close_cancel_restart(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("Go there.")
        run.complete(
            message_html="<p>Go there.</p>",
            suggested_actions=[
                {"label": "Go to reports", "action": "navigate", "handler": "client", "data": {"route": "/reports/"}},
                {"label": "Close", "action": "close", "handler": "client"},
                {"label": "Start over", "action": "restart", "handler": "client"},
                {"label": "Cancel", "action": "cancel", "handler": "client"},
            ],
        )

    server.script = script
    open_tray(page, server)
    send(page, "where are reports?")
    expect(final_messages(page)).to_contain_text("Go there.")
    page.get_by_role("button", name="Go to reports").click()
    page.wait_for_url(re.compile(r"/reports/"))
    # The new page restores the open tray and reloads the conversation over REST.
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page.locator(".chat-bubble--user")).to_have_text("where are reports?")
    expect(final_messages(page)).to_contain_text("Go there.")
    shot(page, "06_after_navigation_restored")

    page.get_by_role("button", name="Close", exact=True).click()
    expect(page.locator(".chat-tray")).to_be_hidden()
    page.get_by_role("button", name="Open chat").click()
    page.get_by_role("button", name="Start over").click()
    expect(page.locator(".chat-welcome")).to_be_visible()
    expect(page.locator(".chat-msg")).to_have_count(0)

    send(page, "again")
    assert server.frames_of("chat.send")[-1]["conversation_id"] is None  # restart dropped the old id
    # Cancel discards the proposal on screen, never the conversation: the tray stays open, the log stays.
    page.get_by_role("button", name="Cancel", exact=True).click()
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page.locator(".chat-bubble--user")).to_have_text("again")
    expect(page.locator(".chat-notice")).to_have_text("Proposal discarded. The conversation is kept.")
    expect(page.get_by_role("button", name="Cancel", exact=True)).to_be_disabled()  # used once
    assert_clean(page)
