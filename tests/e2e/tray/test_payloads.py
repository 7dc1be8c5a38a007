"""Browser tests of the tray against the scripted fake protocol server: the payload panel: a page's renderers, Accept and Reject, the fallback card, a host's own renderer.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import assert_clean, final_messages, open_tray, proposal_turn, send, shot

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("order", ["before", "after"])
def test_page_payload_panel_accept_reject_and_reopen(page: Page, server: FakeProtocolServer, order: str) -> None:
    server.script = proposal_turn
    open_tray(page, server, f"page_script={order}")
    send(page, "propose a schema")
    panel = page.get_by_role("dialog", name="Schema Proposal")
    expect(panel).to_be_visible()
    expect(panel.locator(".schema-card")).to_contain_text("Oncology Monitor <img src=x onerror=alert(1)>")
    assert panel.locator("img").count() == 0
    expect(page.locator(".chat-msg__tools")).to_contain_text("Rename the stream")  # the payload summary
    assert panel.evaluate("el => getComputedStyle(el).width") == "480px"
    shot(page, f"07_payload_panel_{order}")
    panel.get_by_role("button", name="Accept").click()
    expect(panel).to_be_hidden()
    expect(page.locator("#stream-name")).to_have_value("Oncology Monitor <img src=x onerror=alert(1)>")
    expect(page.locator(".chat-payload-outcome")).to_have_text("accepted")

    # The view button reopens it; Reject calls onReject and closes.
    page.get_by_role("button", name="View schema proposal").click()
    expect(panel).to_be_visible()
    page.keyboard.press("Escape")  # Escape closes the panel first, the tray stays
    expect(panel).to_be_hidden()
    expect(page.locator(".chat-tray")).to_be_visible()
    page.get_by_role("button", name="View schema proposal").click()
    panel.get_by_role("button", name="Reject").click()
    expect(panel).to_be_hidden()
    assert page.evaluate("window.__rejected") is True
    assert_clean(page)


def test_site_renderers_fallback_and_tool_history(page: Page, server: FakeProtocolServer) -> None:
    """The site's renderers (static/pages/chat_renderers.js, public API only), the fallback, tool_history."""
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        if "search" in frame["message"]:
            payload = {"payload_id": "s", "type": "search_results", "summary": "2 articles", "data": {
                "total": 2, "query": "CRISPR", "results": [
                    {"id": 1, "title": "Gene <i>editing</i>", "journal": "Nature", "date": "2024-01-02"},
                    {"external_id": "KH-002", "url": "https://evil.example/x", "title": "Base editors", "journal": "Cell", "published": "2023-05-01"},
                ]}}
        elif "article" in frame["message"]:
            payload = {"payload_id": "a", "type": "pubmed_article", "summary": "", "data": {
                "id": 9, "pmid": "123", "title": "Prime editing", "authors": ["Anzalone AV", "Liu DR"],
                "journal": "Nature", "abstract": "Abstract <script>x</script> text."}}
        elif "unknown" in frame["message"]:
            payload = {"payload_id": "u", "type": "mystery_type", "summary": "", "data": {"k": "<b>v</b>"}}
        else:
            payload = {"type": "tool_history", "data": [{"tool_name": "lookup", "input": {"a": 1}, "output": "ok"}]}
        run.complete(message="Done [[tool:0]]" if payload["type"] == "tool_history" else "Done", custom_payload=payload)

    server.script = script
    open_tray(page, server)
    send(page, "search")
    panel = page.get_by_role("dialog", name="Search results")
    expect(panel.get_by_role("link", name="Gene <i>editing</i>")).to_have_attribute("href", "/articles/1/")
    expect(panel).to_contain_text("Nature · 2024-01-02")
    # A foreign url is ignored in favour of the article page built from the id.
    expect(panel.get_by_role("link", name="Base editors")).to_have_attribute("href", "/articles/KH-002/")
    expect(panel).to_contain_text("2 results for “CRISPR”")
    expect(panel.locator(".chat-panel__icon svg")).to_be_visible()  # the renderer's header icon
    shot(page, "08_search_results_panel")
    page.keyboard.press("Escape")

    send(page, "article")
    panel = page.get_by_role("dialog", name="Article")
    expect(panel.get_by_role("heading", name="Prime editing")).to_be_visible()
    expect(panel).to_contain_text("Anzalone AV, Liu DR")
    expect(panel).to_contain_text("Abstract <script>x</script> text.")
    expect(panel.get_by_role("button", name="Accept")).to_have_count(0)
    page.keyboard.press("Escape")

    # Unknown payload type: no auto-open, a view button shows the generic card (as text).
    send(page, "unknown")
    expect(final_messages(page)).to_have_count(3)
    expect(page.get_by_role("dialog")).to_be_hidden()
    page.get_by_role("button", name="View details").click()
    card = page.get_by_role("dialog", name="mystery_type").locator(".chat-fallback-card")
    expect(card.locator("dt")).to_have_text(["k"])
    expect(card.locator("dd")).to_have_text(["<b>v</b>"])
    assert card.locator("b").count() == 0
    page.keyboard.press("Escape")

    # tool_history payload folds into inline tool cards; no panel, no view button.
    send(page, "tools")
    expect(final_messages(page)).to_have_count(4)
    last = final_messages(page).last
    expect(last.get_by_role("button", name="lookup")).to_be_visible()
    expect(last.get_by_role("button", name=re.compile("^View"))).to_have_count(0)
    expect(page.get_by_role("dialog")).to_be_hidden()
    assert_clean(page)


def test_unknown_payload_type_fallback_card(page: Page, server: FakeProtocolServer) -> None:
    data = {
        "title": "Quarterly <img src=x onerror=\"window.__xss=1\">",
        "count": 3,
        "ok": True,
        "missing": None,
        "nested": {"a": [1, 2], "html": "<script>window.__xss=2</script>"},
    }

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        if "list" in frame["message"]:
            payload = {"payload_id": "u2", "type": "raw_list", "summary": "", "data": ["<i>one</i>", 2]}
        else:
            payload = {"payload_id": "u1", "type": "totally_unknown", "summary": "A <b>summary</b> of it", "data": data}
        run.complete(message="Here it is.", message_html="<p>Here it is.</p>", custom_payload=payload)

    server.script = script
    open_tray(page, server)
    send(page, "show me")
    expect(final_messages(page)).to_have_count(1)
    expect(page.get_by_role("dialog")).to_be_hidden()  # no renderer: offered, not pushed
    tools = final_messages(page).locator(".chat-msg__tools")
    expect(tools).to_contain_text("A <b>summary</b> of it")
    tools.get_by_role("button", name="View details").click()
    panel = page.get_by_role("dialog", name="totally_unknown")
    card = panel.locator(".chat-fallback-card")
    expect(card.locator(".chat-fallback-card__summary")).to_have_text("A <b>summary</b> of it")
    expect(card.locator("dt")).to_have_text(["title", "count", "ok", "missing", "nested"])
    expect(card.locator("dd").nth(0)).to_have_text('Quarterly <img src=x onerror="window.__xss=1">')
    expect(card.locator("dd").nth(1)).to_have_text("3")
    expect(card.locator("dd").nth(2)).to_have_text("true")
    expect(card.locator("dd").nth(3)).to_have_text("—")
    expect(card.locator("dd").nth(4).locator("pre")).to_contain_text('"html": "<script>window.__xss=2</script>"')
    for tag in ("img", "script", "b"):
        assert panel.locator(tag).count() == 0, tag
    expect(panel.get_by_role("button", name="Accept")).to_have_count(0)
    shot(page, "08b_fallback_card")
    page.keyboard.press("Escape")

    send(page, "a list")
    expect(final_messages(page)).to_have_count(2)
    final_messages(page).last.get_by_role("button", name="View details").click()
    pre = page.get_by_role("dialog", name="raw_list").locator(".chat-fallback-card pre")
    expect(pre).to_contain_text('"<i>one</i>"')
    assert page.get_by_role("dialog").locator("i").count() == 0
    assert page.evaluate("window.__xss") is None
    assert_clean(page)


def test_host_registered_renderer(page: Page, server: FakeProtocolServer) -> None:
    """A host's own classic script registers a renderer through window.pagechat (harness HOST_SCRIPT)."""

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.complete(
            message="A chart.",
            message_html="<p>A chart.</p>",
            custom_payload={"payload_id": "c-1", "type": "host_chart", "summary": "Two bars",
                            "data": {"points": [{"label": "<b>alpha</b>", "value": 3}, {"label": "beta", "value": 5}]}},
        )

    server.script = script
    open_tray(page, server)
    # Mistakes are refused when registering, not when a payload arrives.
    assert page.evaluate("window.__hostRegistrationErrors") == ["TypeError", "TypeError", "TypeError"]
    assert sorted(page.evaluate("Object.keys(window.pagechat)")) == sorted([
        "getContext", "getTray", "onTrayReady", "registerClientAction", "registerPageHandlers",
        "registerPayloadHandler", "registerPayloadRenderer", "setContext", "ICONS",
        "registerTool", "unregisterTool", "setState", "getState", "onState",  # frontend tools and page state
    ])
    send(page, "chart please")
    panel = page.get_by_role("dialog", name="Host chart")  # a renderer with a title opens the panel
    expect(panel.locator(".host-chart__bar")).to_have_text(["<b>alpha</b>: 3", "beta: 5"])
    assert panel.locator("b").count() == 0
    expect(panel.locator(".chat-panel__icon svg path")).to_have_attribute("d", re.compile(r"^M4 20V10"))
    assert panel.evaluate("el => getComputedStyle(el).width") == "380px"
    shot(page, "08c_host_renderer")

    # Reject returns false: the panel stays and nothing is recorded.
    panel.get_by_role("button", name="Reject").click()
    expect(panel).to_be_visible()
    expect(page.locator(".chat-payload-outcome")).to_have_count(0)
    panel.get_by_role("button", name="Accept").click()
    expect(panel).to_be_hidden()
    expect(page.locator(".chat-payload-outcome")).to_have_text("accepted")
    assert page.evaluate("window.__hostAccepted") == "c-1"
    expect(page.get_by_role("button", name="View host chart")).to_be_visible()
    assert page.evaluate("window.__hostEvents") == ["pagechat:reply:complete", "pagechat:payload-outcome:accepted"]
    assert_clean(page)
