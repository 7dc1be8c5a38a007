"""Browser tests of the chat tray against the scripted fake protocol server (no Django backend).

Each test scripts the server side of a turn event by event, drives the tray in Debian's
chromium through Playwright, and checks both what the user sees and the frames the tray sent.
Screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from .conftest import CSP_LISTENER, screenshot
from .fake_protocol_server import FakeProtocolServer, FakeRun

pytestmark = pytest.mark.e2e


UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def server() -> Iterator[FakeProtocolServer]:
    srv = FakeProtocolServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def page(browser: Browser, server: FakeProtocolServer) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" and "favicon" not in msg.text else None)
    pg.errors = errors  # type: ignore[attr-defined]
    # Record CSP violations (inline script/handlers) on every page load, navigations included.
    pg.add_init_script(CSP_LISTENER)
    yield pg
    context.close()


def shot(page: Page, name: str) -> None:
    screenshot(page, name)


def goto(page: Page, server: FakeProtocolServer, query: str = "", path: str = "/") -> None:
    page.goto(f"{server.http_url}{path}?{query}")
    expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()


def open_tray(page: Page, server: FakeProtocolServer, query: str = "") -> None:
    goto(page, server, query)
    page.get_by_role("button", name="Open chat").click()
    expect(page.locator(".chat-tray")).to_be_visible()


def send(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def final_messages(page: Page):
    return page.locator(".chat-msg--assistant:not(.chat-msg--live)")


def row_action(page: Page, title: str, name: str) -> Any:
    """One of a listed conversation's actions (Rename, Pin, Download, Delete), from the row's menu."""
    page.get_by_role("button", name=f"Actions for conversation: {title}").click()
    return page.get_by_role("menuitem", name=name)


def assert_clean(page: Page, allowed_csp: tuple[str, ...] = ()) -> None:
    violations = [v for v in page.evaluate("window.__csp") if v not in allowed_csp]
    assert violations == [], f"CSP violations: {violations}"
    assert page.errors == [], page.errors  # type: ignore[attr-defined]


# ---- template tag (no browser) ---------------------------------------------------------------


@pytest.mark.django_db  # the tag checks the page's access (group restrictions are rows)
def test_template_tag_renders_config_and_assets(rf: Any, settings: Any) -> None:
    import json

    from django.contrib.auth.models import AnonymousUser
    from django.middleware.csp import ContentSecurityPolicyMiddleware
    from django.template import RequestContext, Template

    class Staff:
        is_authenticated = True
        is_staff = True

        def get_username(self) -> str:
            return "alice"

    settings.CHAT_PROVIDER = "chat.providers.does_not_exist.Provider"
    request = rf.get("/reports/")
    request.user = Staff()
    ContentSecurityPolicyMiddleware(lambda r: None).process_request(request)
    tpl = Template('{% load chat_tags %}{% chat_tray page="reports" context=ctx %}')
    html = tpl.render(RequestContext(request, {"ctx": {"report_id": 3, "evil": "</script>"}}))
    assert '<div id="chat-tray" data-chat-tray></div>' in html
    assert 'href="/static/chat/tray.css"' in html
    assert f'<script type="module" src="/static/chat/tray.js" nonce="{request._csp_nonce}">' in html
    assert "</script>\"" not in html  # json_script escapes the page context
    assert "{#" not in html and "{%" not in html  # no template comment leaks onto the host's page as text
    config = json.loads(re.search(r'<script id="chat-tray-config" type="application/json">(.*?)</script>', html).group(1))
    assert config["page"] == "reports"
    assert config["context"] == {"report_id": 3, "evil": "</script>", "current_page": "reports"}
    assert config["ws_url"] == "/api/ws/" and config["api_base"] == "/api/"
    assert config["is_staff"] is True and config["user"] == "alice" and config["offline"] is False
    assert config["csrf_token"]

    settings.CHAT_PROVIDER = "chat.providers.base.Provider"
    request.user = AnonymousUser()
    assert tpl.render(RequestContext(request, {"ctx": {}})).strip() == ""


# ---- welcome, keyboard, accessibility -------------------------------------------------------------


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


# ---- a full streamed turn ----------------------------------------------------------------------------


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


# ---- payload panel --------------------------------------------------------------------------------------


async def proposal_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    await run.stream_text("Here is a proposal.")
    run.complete(
        message_html="<p>Here is a proposal.</p>",
        custom_payload={
            "payload_id": "p-1",
            "type": "schema_proposal",
            "summary": "Rename the stream",
            "data": {"proposed_changes": {"stream_name": "Oncology Monitor <img src=x onerror=alert(1)>", "purpose": "Track"}},
        },
    )


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


# ---- reconnect, resume, resync, idempotent resend ---------------------------------------------------------


def test_reconnect_resumes_without_duplicates(page: Page, server: FakeProtocolServer) -> None:
    expected = "alpha beta gamma delta epsilon zeta eta theta iota kappa"

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(expected[:22], chunk=5)
        await run.gate("before_drop")
        await run.drop_connections()
        await run.stream_text(expected[22:], chunk=5)  # emitted while nobody listens
        await run.gate("resumed")
        run.complete(message=expected, message_html=f"<p>{expected}</p>")

    server.script = script
    server.resume_overlap = 3  # the server replays 3 events the tray already has
    open_tray(page, server)
    send(page, "stream a lot")
    stream = page.locator(".chat-bubble--streaming .chat-stream-body")
    expect(stream).to_have_text(expected[:22])
    seq_before = len(server.runs[next(iter(server.runs))].log)
    server.open_gate("before_drop")

    (resume,) = server.wait_for_frame("chat.resume")
    assert resume["after_seq"] == seq_before
    assert resume["run_id"] == next(iter(server.runs))
    expect(stream).to_have_text(expected)  # complete and not duplicated
    shot(page, "09_resumed_stream")
    server.open_gate("resumed")
    expect(final_messages(page)).to_have_text(expected)
    assert len(server.frames_of("chat.send")) == 1
    assert server.connections == 2
    assert_clean(page)


def test_retry_after_the_tray_gave_up_reconnecting_reads_the_answer_back_instead_of_sending_twice(page: Page, server: FakeProtocolServer) -> None:
    answer = "The answer begins and ends while nobody listens."

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(answer[:18])
        await run.gate("drop")
        await run.drop_connections()  # and the server stays unreachable (refuse_connections) for a while
        await run.stream_text(answer[18:])
        run.complete(message=answer, message_html=f"<p>{answer}</p>")

    server.script = script
    page.clock.install()  # the tray's reconnect backoff (about 45 s before it gives up) runs on a clock the test moves
    open_tray(page, server)
    send(page, "tell me")
    expect(page.locator(".chat-bubble--streaming .chat-stream-body")).to_have_text(answer[:18])
    server.refuse_connections = True
    server.open_gate("drop")
    alert = _until_the_tray_gives_up(page)
    expect(final_messages(page).last).to_contain_text(answer[:18])  # what arrived is kept meanwhile, marked
    server.refuse_connections = False
    alert.get_by_role("button", name="Retry").click()
    # the run had been acknowledged: the server has the message, and by now its whole answer
    expect(final_messages(page)).to_have_count(1)
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text(answer)
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    assert len(server.frames_of("chat.send")) == 1  # never sent twice
    _forget_refused_reconnects(page)
    assert_clean(page)


def test_retry_after_the_tray_gave_up_before_any_ack_sends_the_same_message_again(page: Page, server: FakeProtocolServer) -> None:
    page.clock.install()
    open_tray(page, server)
    server.drop_next_send = True  # the socket closes on the send, before the server acknowledges it ...
    server.refuse_connections = True  # ... and the server stays unreachable
    send(page, "hello?")
    alert = _until_the_tray_gives_up(page)
    expect(final_messages(page)).to_have_count(0)  # nothing arrived
    server.refuse_connections = False
    alert.get_by_role("button", name="Retry").click()
    expect(final_messages(page)).to_have_text("You said: hello?")
    first, second = server.frames_of("chat.send")
    assert first == second  # the same client_message_id: a server that had stored it would run it at most once
    assert len(server.runs) == 1
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    _forget_refused_reconnects(page)
    assert_clean(page)


def _until_the_tray_gives_up(page: Page) -> Any:
    """Move the tray's clock through its reconnect backoff (about 45 s) until it says the connection is lost."""
    alert = page.get_by_role("alert")
    for _ in range(60):
        if alert.filter(has_text="Lost the connection to the server.").count():
            break
        page.clock.run_for(2000)
        page.wait_for_timeout(50)  # each refused handshake fails in real time
    expect(alert).to_contain_text("Lost the connection to the server.")
    return alert


def _forget_refused_reconnects(page: Page) -> None:
    """The browser reports each refused handshake on the console: expected here, and nothing else may be there."""
    refused = [e for e in page.errors if "Unexpected response code: 503" in e]  # type: ignore[attr-defined]
    assert len(refused) >= 10
    page.errors[:] = [e for e in page.errors if e not in refused]  # type: ignore[attr-defined]


def test_send_retried_after_reconnect_reuses_client_message_id(page: Page, server: FakeProtocolServer) -> None:
    server.drop_next_send = True
    open_tray(page, server)
    send(page, "hello?")
    expect(final_messages(page)).to_have_text("You said: hello?")
    first, second = server.wait_for_frame("chat.send", 2)
    assert first["client_message_id"] == second["client_message_id"]
    assert first == second
    assert len(server.runs) == 1
    assert_clean(page)


def test_resync_reloads_conversation_over_rest(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("partial ")
        await run.gate("drop")
        await run.drop_connections()
        await run.stream_text("rest of it")
        run.complete(message="partial rest of it", message_html="<p>partial <em>rest of it</em></p>")

    server.script = script
    server.resync_on_resume = True
    open_tray(page, server)
    send(page, "resync me")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("partial")
    server.open_gate("drop")
    expect(final_messages(page).locator("em")).to_have_text("rest of it")
    expect(page.locator(".chat-bubble--user")).to_have_text("resync me")
    cid = next(iter(server.conversations))
    assert any(r["path"] == f"/api/conversations/{cid}/?limit=50" for r in server.http_requests)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert_clean(page)


@pytest.mark.parametrize("placeholder", [False, True], ids=["no-placeholder", "streaming-placeholder"])
def test_navigation_mid_run_resumes_from_start(page: Page, server: FakeProtocolServer, placeholder: bool) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("first half, ")
        await run.gate("navigated")
        await run.stream_text("second half.")
        run.complete(message_html="<p>first half, second half.</p>")

    server.script = script
    server.streaming_placeholders = placeholder  # the real server stores a "streaming" reply at turn start
    open_tray(page, server)
    send(page, "long one")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("first half,")
    page.goto(f"{server.http_url}/reports/")
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page.locator(".chat-bubble--user")).to_have_text("long one")
    (resume,) = server.wait_for_frame("chat.resume")
    assert resume["after_seq"] == 0
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("first half,")
    expect(final_messages(page)).to_have_count(0)  # the placeholder is followed live, not rendered
    server.open_gate("navigated")
    expect(final_messages(page)).to_have_text("first half, second half.")
    assert_clean(page)


def test_lost_event_gap_is_refilled_by_resume(page: Page, server: FakeProtocolServer) -> None:
    text = "one two three four five six seven"

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(text, chunk=4)
        await run.gate("checked")
        run.complete(message=text, message_html=f"<p>{text}</p>")

    server.script = script
    server.lose_live_seqs = {4}
    open_tray(page, server)
    send(page, "gap")
    expect(page.locator(".chat-bubble--streaming .chat-stream-body")).to_have_text(text)
    (resume,) = server.wait_for_frame("chat.resume")
    assert resume["after_seq"] == 3
    server.open_gate("checked")
    expect(final_messages(page)).to_have_text(text)
    assert_clean(page)


# ---- stop, errors, retry, approval -----------------------------------------------------------------


def test_stop_shows_partial_text_marked_stopped(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("I was saying something long")
        await asyncio.sleep(60)

    server.script = script
    open_tray(page, server)
    send(page, "talk")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("I was saying something long")
    page.get_by_role("button", name="Stop generating").click()
    (cancel,) = server.wait_for_frame("chat.cancel")
    assert cancel["run_id"] == next(iter(server.runs))
    last = final_messages(page).last
    expect(last).to_contain_text("I was saying something long")
    expect(last.locator(".chat-tag--stopped")).to_have_text("stopped")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(page.get_by_role("button", name="Stop generating")).to_be_hidden()
    shot(page, "10_stopped")
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


def test_regenerate_keeps_the_earlier_answer_as_a_version_to_page_back_to(page: Page, server: FakeProtocolServer) -> None:
    takes = iter(["The first take.", "The second take.", "The third take."])

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        text = next(takes)
        await run.stream_text(text)
        run.complete(message_html=f"<p>{text}</p>")

    server.script = script
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.http_url)
    open_tray(page, server)
    send(page, "try twice")
    expect(final_messages(page).last).to_contain_text("The first take.")
    expect(page.get_by_role("group", name="Versions of this answer")).to_have_count(0)  # one version: no pager
    for n, text in ((2, "The second take."), (3, "The third take.")):
        final_messages(page).last.get_by_role("button", name="Regenerate").click()
        expect(final_messages(page).last.locator(".chat-bubble")).to_have_text(text)
        expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_contain_text(f"{n} / {n}")
    assert [f["replace_last"] for f in server.frames_of("chat.send")[1:]] == ["answer", "answer"]
    answer = final_messages(page).last
    pager = answer.get_by_role("group", name="Versions of this answer")
    pager.get_by_role("button", name="Previous version").click()
    pager.get_by_role("button", name="Previous version").click()
    expect(pager).to_contain_text("1 / 3")
    expect(answer.locator(".chat-bubble")).to_have_text("The first take.")
    expect(pager.get_by_role("button", name="Previous version")).to_be_disabled()
    answer.get_by_role("button", name="Copy", exact=True).click()  # copies the version shown
    expect(page.locator(".chat-notice")).to_have_text("Copied to clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == "The first take."
    shot(page, "10c_answer_versions")
    pager.get_by_role("button", name="Next version").click()
    expect(answer.locator(".chat-bubble")).to_have_text("The second take.")
    expect(final_messages(page)).to_have_count(1)
    # a question has Copy too, as in ChatGPT and Claude.ai
    page.get_by_role("group", name="Question actions").get_by_role("button", name="Copy").click()
    expect(page.locator(".chat-notice")).to_have_text("Copied to clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == "try twice"
    assert_clean(page)


def test_a_failed_regenerate_keeps_the_earlier_answer_in_reach_and_a_refused_one_puts_it_back(page: Page, server: FakeProtocolServer) -> None:
    outcomes = iter(["The first take.", None, "The second take."])  # None: the run fails before any text

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        text = next(outcomes)
        if text is None:
            run.emit("error", code="provider_error", message="The model is overloaded.")
            return
        await run.stream_text(text)
        run.complete(message_html=f"<p>{text}</p>")

    server.script = script
    open_tray(page, server)
    send(page, "try again")
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text("The first take.")
    # refused before any run (busy): nothing was replaced, so the answer comes back as it was
    server.next_send_error = {"code": "busy", "message": "A reply is still running in this conversation."}
    final_messages(page).last.get_by_role("button", name="Regenerate").click()
    expect(page.get_by_role("alert")).to_contain_text("A reply is still running")
    expect(final_messages(page)).to_have_count(1)
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text("The first take.")
    expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_have_count(0)
    # the run fails before writing: its (empty) answer shows, with the earlier one a click away
    page.get_by_role("alert").get_by_role("button", name="Retry").click()
    expect(page.get_by_role("alert")).to_contain_text("The model is overloaded.")
    failed = final_messages(page).last
    expect(final_messages(page)).to_have_count(1)
    expect(failed.locator(".chat-tag--error")).to_have_text("incomplete")
    pager = failed.get_by_role("group", name="Versions of this answer")
    expect(pager).to_contain_text("2 / 2")
    pager.get_by_role("button", name="Previous version").click()
    expect(failed.locator(".chat-bubble")).to_have_text("The first take.")
    # Retry regenerates again: the empty answer is not one more version
    page.get_by_role("alert").get_by_role("button", name="Retry").click()
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text("The second take.")
    expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_contain_text("2 / 2")
    expect(final_messages(page)).to_have_count(1)
    assert [f.get("replace_last") for f in server.frames_of("chat.send")] == [None, "answer", "answer", "answer"]
    assert_clean(page)


def test_an_answer_cut_at_a_limit_says_so_and_continues(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        if frame["message"] == "Continue":
            await run.stream_text("and that is the end of it.")
            run.complete(message_html="<p>and that is the end of it.</p>")
            return
        await run.stream_text("The first half of a long answer, and then")
        run.complete(message_html="<p>The first half of a long answer, and then</p>", stop_reason="max_tokens")

    server.script = script
    open_tray(page, server)
    send(page, "tell me everything")
    cut = final_messages(page).first
    expect(cut.get_by_role("note")).to_contain_text("The answer stopped at its length limit.")
    shot(page, "10b_unfinished_answer")
    cut.get_by_role("button", name="Continue", exact=True).click()
    (_, again) = server.wait_for_frame("chat.send", count=2)
    assert again["message"] == "Continue" and again["interaction_type"] == "value_selected"
    assert again["conversation_id"] is not None  # the same conversation goes on
    expect(final_messages(page)).to_have_count(2)
    expect(final_messages(page).last).to_have_text("and that is the end of it.")
    expect(final_messages(page).last.get_by_role("note")).to_have_count(0)
    # the cut answer keeps saying why it ends early; only the latest answer may be continued
    expect(cut.get_by_role("note")).to_contain_text("The answer stopped at its length limit.")
    expect(page.get_by_role("button", name="Continue", exact=True)).to_have_count(0)
    # after a reload the stored message says the same (REST: the message's stop_reason)
    page.reload()
    expect(final_messages(page)).to_have_count(2)
    expect(final_messages(page).first.get_by_role("note")).to_contain_text("The answer stopped at its length limit.")
    expect(page.get_by_role("button", name="Continue", exact=True)).to_have_count(0)
    assert_clean(page)


def test_a_reloaded_answer_cut_at_the_step_limit_offers_continue(page: Page, server: FakeProtocolServer) -> None:
    cid = server.add_conversation("Steps", [
        {"role": "user", "content": "do many things"},
        {"role": "assistant", "content": "I did three of them", "stop_reason": "max_iterations"},
    ])
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    page.locator(".chat-conversation").filter(has_text="Steps").click()
    last = final_messages(page).last
    expect(last.get_by_role("note")).to_contain_text("The answer stopped at the limit of steps one answer may take.")
    last.get_by_role("button", name="Continue", exact=True).click()
    assert server.wait_for_frame("chat.send")[0]["conversation_id"] == cid
    assert_clean(page)


def test_run_error_then_retry_answers_the_stored_question_again(page: Page, server: FakeProtocolServer) -> None:
    attempts: list[str] = []

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        attempts.append(frame["client_message_id"])
        if len(attempts) == 1:
            run.emit("error", code="provider_error", message="The model is overloaded.")
            return
        await run.stream_text("Worked this time.")
        run.complete(message_html="<p>Worked this time.</p>")

    server.script = script
    open_tray(page, server)
    send(page, "try me")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("The model is overloaded.")
    shot(page, "11_error_retry")
    alert.get_by_role("button", name="Retry").click()
    expect(final_messages(page).last).to_have_text("Worked this time.")
    expect(page.get_by_role("alert")).to_have_count(0)
    first, second = server.frames_of("chat.send")
    # the run had started, so the server stored the question: the retry regenerates its answer instead of sending
    # the question a second time (which would store it twice)
    assert first["message"] == "try me" and second["message"] == "" and second["replace_last"] == "answer"
    assert second["conversation_id"] is not None  # the conversation the failed run created
    assert first["client_message_id"] != second["client_message_id"]
    assert UUID4.match(second["client_message_id"])
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    expect(final_messages(page)).to_have_count(1)
    assert_clean(page)


def test_frame_level_busy_error_shows_retry(page: Page, server: FakeProtocolServer) -> None:
    server.next_send_error = {"code": "busy", "message": "A reply is still running in this conversation."}
    open_tray(page, server)
    send(page, "hello")
    expect(page.get_by_role("alert")).to_contain_text("A reply is still running")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    page.get_by_role("button", name="Retry").click()
    expect(final_messages(page)).to_have_text("You said: hello")
    assert_clean(page)


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


# ---- conversations, diagnostics, sanitizing, layout ----------------------------------------------------


def test_conversation_list_load_new_and_delete(page: Page, server: FakeProtocolServer) -> None:
    older = server.add_conversation("Older chat", [{"role": "user", "content": "old question"}, {"role": "assistant", "content": "old answer", "message_html": "<p>old answer</p>"}])
    newer = server.add_conversation("Tool chat", [
        {"role": "user", "content": "search it"},
        {"role": "assistant", "content": "Result [[tool:0]]", "message_html": '<p>Result</p><div class="tool-slot" data-tool-index="0"></div>',
         "tool_history": [{"tool_name": "search_articles", "input": {"q": "x"}, "output": "3 hits"}],
         "suggested_values": [{"label": "More", "value": "more"}]},
    ])
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    items = page.locator(".chat-conversation")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("Tool chat")
    shot(page, "13_conversation_list")
    items.first.click()
    expect(page.locator(".chat-bubble--user")).to_have_text("search it")
    expect(final_messages(page).get_by_role("button", name="search_articles")).to_be_visible()
    expect(page.get_by_role("button", name="More")).to_be_visible()  # chips of the latest message
    send(page, "follow up")
    expect(final_messages(page).last).to_have_text("You said: follow up")
    assert server.frames_of("chat.send")[-1]["conversation_id"] == newer

    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".chat-welcome")).to_be_visible()

    page.get_by_role("button", name="History").click()
    delete = row_action(page, "Older chat", "Delete conversation: Older chat")
    delete.click()
    expect(delete).to_have_text("Confirm delete")
    delete.click()
    expect(page.locator(".chat-conversation")).to_have_count(1)
    assert older not in server.conversations
    (req,) = [r for r in server.http_requests if r["method"] == "DELETE"]
    assert req["headers"].get("X-CSRFToken") == "test-csrf-token"
    assert_clean(page)


def test_a_long_conversation_opens_at_its_latest_messages_and_reads_back_on_request(page: Page, server: FakeProtocolServer) -> None:
    """A conversation of 120 messages opens with its latest 50; "Show earlier messages" puts the 50 before them above,
    where the reader was stays in view, and the last part leaves no button; the latest answer keeps its actions."""
    said: list[dict[str, Any]] = []
    for i in range(60):
        said += [{"role": "user", "content": f"question {i}"},
                 {"role": "assistant", "content": f"answer {i}", "message_html": f"<p>answer {i}</p>"}]
    server.add_conversation("Long chat", said)
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    page.locator(".chat-conversation").first.click()
    bubbles = page.locator(".chat-bubble--user")
    expect(final_messages(page).last).to_have_text("answer 59")
    expect(bubbles).to_have_count(25)
    expect(bubbles.first).to_have_text("question 35")
    assert server.detail_queries[-1] == {"limit": "50"}
    earlier = page.get_by_role("button", name="Show earlier messages")
    expect(earlier).to_be_visible()
    shot(page, "long_conversation_latest")

    log = page.get_by_role("log", name="Conversation")
    earlier.click()
    expect(bubbles).to_have_count(50)
    expect(bubbles.first).to_have_text("question 10")
    first_id = server.conversations[max(server.conversations)]["messages"][70]["id"]  # "question 35"
    assert server.detail_queries[-1] == {"limit": "50", "before": str(first_id)}
    # the reader's place is kept: the message that was at the top is still in view, not pushed down out of it
    top = page.locator(".chat-bubble--user", has_text="question 35")
    expect(top).to_be_in_viewport()
    earlier.click()
    expect(bubbles).to_have_count(60)
    expect(bubbles.first).to_have_text("question 0")
    expect(earlier).to_be_hidden()
    expect(log).to_be_focused()  # the button that had focus is gone
    # the latest answer still has the latest answer's actions; none of the older ones got them
    expect(page.locator(".chat-regenerate:visible")).to_have_count(1)
    expect(final_messages(page).last.locator(".chat-regenerate")).to_be_visible()
    send(page, "one more")
    expect(final_messages(page).last).to_have_text("You said: one more")
    assert_clean(page)


def test_conversation_list_searches_and_shows_more(page: Page, server: FakeProtocolServer) -> None:
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    expect(page.locator(".chat-conversations__results")).to_have_text("No conversations yet.")  # and nothing else
    titled = server.add_conversation("Gene editing notes", [{"role": "user", "content": "hello"}])
    said = server.add_conversation("Untitled", [{"role": "user", "content": "what about GENE drives?"}])
    for i in range(50):  # 52 in all: more than one page of 50
        server.add_conversation(f"Chat {i}", [{"role": "user", "content": "small talk"}])
    page.get_by_role("button", name="History").click()  # closes the list
    page.get_by_role("button", name="History").click()
    items = page.locator(".chat-conversation")
    expect(items).to_have_count(50)
    expect(page.get_by_role("button", name="Delete all conversations")).to_be_visible()
    page.get_by_role("button", name="Show more").click()
    expect(items).to_have_count(52)
    expect(page.get_by_role("button", name="Show more")).to_have_count(0)
    assert server.list_queries[-2:] == [{"limit": "50"}, {"limit": "50", "offset": "50"}]

    search = page.get_by_role("searchbox", name="Search conversations")
    search.fill("nothing like it")
    expect(page.get_by_role("status").filter(has_text="No conversations match “nothing like it”.")).to_be_visible()
    expect(page.locator(".chat-conversations__results")).to_have_text("No conversations match “nothing like it”.")  # nothing else
    search.fill("gene")
    expect(items).to_have_count(2)  # a title and a message, newest first
    assert [items.nth(i).get_attribute("data-conversation-id") for i in range(2)] == [str(said), str(titled)]
    expect(page.get_by_role("button", name="Delete all conversations")).to_have_count(0)  # not over a filtered list
    assert server.list_queries[-1] == {"q": "gene", "limit": "50"}
    expect(page.locator(".chat-conversations__results")).not_to_contain_text("null")
    shot(page, "13b_conversation_search")
    items.nth(1).click()  # a found conversation opens as one from the whole list does
    expect(page.locator(".chat-bubble--user")).to_have_text("hello")
    assert_clean(page)


def test_show_more_after_a_delete_skips_no_conversation(page: Page, server: FakeProtocolServer) -> None:
    oldest = [server.add_conversation(f"Old {i}", [{"role": "user", "content": "hi"}]) for i in range(2)]
    for i in range(50):
        server.add_conversation(f"Chat {i}", [{"role": "user", "content": "small talk"}])
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    items = page.locator(".chat-conversation")
    expect(items).to_have_count(50)
    delete = row_action(page, "Chat 10", "Delete conversation: Chat 10")
    delete.click()
    delete.click()
    expect(items).to_have_count(49)
    page.get_by_role("button", name="Show more").click()
    expect(items).to_have_count(51)  # both older ones: the list moved up by one, and so did the next page
    assert server.list_queries[-1] == {"limit": "50", "offset": "49"}
    listed = [items.nth(i).get_attribute("data-conversation-id") for i in range(51)]
    assert listed[-2:] == [str(oldest[1]), str(oldest[0])]
    assert_clean(page)


def test_conversation_list_is_grouped_by_day_and_pinned_ones_come_first(page: Page, server: FakeProtocolServer) -> None:
    now = datetime.now(UTC)

    def ago(days: int) -> str:
        return (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")

    long_ago = now - timedelta(days=100)
    ids = {title: server.add_conversation(title, [{"role": "user", "content": "hello"}], updated_at=ago(days))
           for title, days in [("Old chat", 100), ("Last month", 20), ("This week", 3), ("Yesterday's", 1), ("Today's", 0)]}
    by_day = ["Today", "Yesterday", "Previous 7 days", "Previous 30 days", long_ago.strftime("%B %Y")]
    headings = page.locator(".chat-conversation-group__title")
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    expect(headings).to_have_text(by_day)
    for heading, title in zip(by_day, ["Today's", "Yesterday's", "This week", "Last month", "Old chat"], strict=True):
        expect(page.get_by_role("list", name=heading).locator(".chat-conversation__title")).to_have_text(title)  # labelled by its heading

    row_action(page, "Old chat", "Pin conversation: Old chat").click()
    expect(headings).to_have_text(["Pinned", *by_day[:4]])  # its month had nothing else
    expect(page.get_by_role("list", name="Pinned").locator(".chat-conversation__title")).to_have_text("Old chat")
    expect(page.get_by_role("button", name="Actions for conversation: Old chat")).to_be_focused()
    assert "pinned_at" in server.conversations[ids["Old chat"]]
    row_action(page, "This week", "Pin conversation: This week").click()
    expect(page.get_by_role("list", name="Pinned").locator(".chat-conversation__title")).to_have_text(["This week", "Old chat"])  # latest pinned first
    shot(page, "13c_conversation_groups")

    row_action(page, "Old chat", "Unpin conversation: Old chat").click()
    expect(headings).to_have_text(["Pinned", *by_day[:2], by_day[3], by_day[4]])  # back under its month
    expect(page.get_by_role("button", name="Actions for conversation: Old chat")).to_be_focused()
    expect(row_action(page, "Old chat", "Pin conversation: Old chat")).to_be_visible()  # its menu offers Pin again
    page.keyboard.press("Escape")
    assert "pinned_at" not in server.conversations[ids["Old chat"]]
    delete = row_action(page, "Yesterday's", "Delete conversation: Yesterday's")
    delete.click()
    delete.click()
    expect(headings).to_have_text(["Pinned", by_day[0], by_day[3], by_day[4]])  # no heading over nothing
    assert_clean(page)


def test_wide_view_is_remembered_across_pages_and_left_out_on_a_phone(page: Page, server: FakeProtocolServer) -> None:
    open_tray(page, server)
    tray = page.locator(".chat-tray")
    wide = page.get_by_role("button", name="Wide view")
    expect(wide).to_have_attribute("aria-pressed", "false")
    narrow_width = tray.bounding_box()["width"]  # type: ignore[index]
    wide.click()
    expect(wide).to_have_attribute("aria-pressed", "true")
    assert tray.bounding_box()["width"] >= 1.7 * narrow_width  # type: ignore[index]  # 400 -> 720 px at 1280 wide
    page.goto(f"{server.http_url}/reports/")  # the next page: the tray comes back open, and still wide
    expect(wide).to_have_attribute("aria-pressed", "true")
    assert tray.bounding_box()["width"] >= 1.7 * narrow_width  # type: ignore[index]
    page.set_viewport_size({"width": 390, "height": 800})
    expect(wide).to_be_hidden()  # a phone's sheet is the whole width already
    assert tray.bounding_box()["width"] == 390  # type: ignore[index]
    page.set_viewport_size({"width": 1280, "height": 800})
    wide.click()
    expect(wide).to_have_attribute("aria-pressed", "false")
    assert tray.bounding_box()["width"] == narrow_width  # type: ignore[index]
    assert page.evaluate("localStorage.getItem('chat-tray:wide')") is None
    assert_clean(page)


DIAGNOSTICS = {
    "model": "claude-sonnet-4-5",
    "tools": ["search_articles"],
    "system_prompt": "IDENTITY <script>alert(1)</script>",
    "messages": [{"role": "user", "content": "hi"}],
    "raw_output": {"content": [{"type": "text", "text": "hello"}]},
    "usage": {"input_tokens": 10, "output_tokens": 20},
    "timings": {"first_event_ms": 3},
}


@pytest.mark.parametrize("staff", [True, False])
def test_staff_diagnostics(page: Page, server: FakeProtocolServer, staff: bool) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.complete(message="hello", message_html="<p>hello</p>", **({"diagnostics": DIAGNOSTICS} if staff else {}))

    server.script = script
    open_tray(page, server, "staff=1" if staff else "")
    send(page, "hi")
    expect(final_messages(page)).to_have_text(re.compile("hello"))
    button = page.get_by_role("button", name="Diagnostics")
    if not staff:
        expect(button).to_have_count(0)
        return
    button.click()
    panel = page.get_by_role("dialog", name="Diagnostics")
    expect(panel).to_contain_text("claude-sonnet-4-5")
    expect(panel).to_contain_text('"output_tokens": 20')
    panel.get_by_text("system prompt").click()
    expect(panel).to_contain_text("IDENTITY <script>alert(1)</script>")
    assert panel.locator("script").count() == 0
    shot(page, "14_diagnostics")
    assert_clean(page)


def test_message_html_is_sanitized_again(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.complete(
            message="x",
            message_html=(
                '<p onclick="window.__xss=1">safe text</p><script>window.__xss=2</script>'
                '<img src="x" onerror="window.__xss=3"><iframe src="/"></iframe><style>body{display:none}</style>'
                '<a href="javascript:window.__xss=4">js link</a> <a href="https://example.org/">ext</a>'
                '<a href="/articles/1/">internal</a><object data="x"></object><embed src="x">'
            ),
        )

    server.script = script
    open_tray(page, server)
    send(page, "xss")
    final = final_messages(page)
    expect(final).to_contain_text("safe text")
    bubble = final.locator(".chat-bubble")
    for tag in ("script", "img", "iframe", "style", "object", "embed"):
        assert bubble.locator(tag).count() == 0, tag
    assert bubble.locator("[onclick]").count() == 0
    assert bubble.get_by_text("js link").get_attribute("href") is None
    ext = bubble.get_by_role("link", name="ext")
    assert ext.get_attribute("rel") == "noopener noreferrer" and ext.get_attribute("target") == "_blank"
    assert bubble.get_by_role("link", name="internal").get_attribute("target") is None
    bubble.get_by_text("safe text").click()
    bubble.get_by_text("js link").click()
    assert page.evaluate("window.__xss") is None
    # Chromium reports (and blocks) inline handlers as soon as any parser - <template>,
    # DOMParser, even setHTML - sees this deliberately unsanitized HTML; nothing else may show.
    page.errors[:] = [e for e in page.errors if not e.startswith("Executing inline event handler violates")]  # type: ignore[attr-defined]
    assert_clean(page, allowed_csp=("script-src-attr inline",))


def test_code_is_coloured_without_becoming_markup(page: Page, server: FakeProtocolServer) -> None:
    """Code that looks like HTML is coloured as text: highlight.js's output is sanitized again and used only if the
    text is unchanged; a language it does not know, and code in no language, stay plain."""
    evil = '<img src="x" onerror="window.__xss=1"><script>window.__xss=2</script>'
    escaped = evil.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.complete(message="code", message_html=(
            f'<pre><code class="language-html">{escaped}</code></pre>'
            '<pre><code class="language-nosuchlang">plain words</code></pre><pre><code>no language</code></pre>'))

    server.script = script
    open_tray(page, server)
    send(page, "show me html")
    blocks = final_messages(page).locator("pre code")
    expect(blocks.nth(0)).to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(0).locator(".hljs-tag").first).to_be_visible()
    assert blocks.nth(0).inner_text() == evil
    bubble = final_messages(page).locator(".chat-bubble")
    assert bubble.locator("img").count() == 0 and bubble.locator("script").count() == 0
    assert page.evaluate("window.__xss") is None
    assert blocks.nth(0).evaluate("el => [...el.querySelectorAll('*')].every(n => n.tagName === 'SPAN')")
    for plain in (blocks.nth(1), blocks.nth(2)):
        expect(plain).not_to_have_class(re.compile(r"\bhljs\b"))
        assert plain.locator("span").count() == 0
    assert_clean(page)


def test_code_is_coloured_as_it_streams_once_its_fence_closes(page: Page, server: FakeProtocolServer) -> None:
    """While an answer streams, a code block is coloured as soon as its closing fence arrives; the block still growing
    stays plain (it would be repainted every frame), as does one in a language highlight.js does not know."""
    first = 'def greet(name):\n    return f"Hello, {name}!"'

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(f"Two blocks:\n\n```python\n{first}\n```\n\n```nosuchlang\nplain\n```\n\n```js\nconst x = 1;")
        await run.gate("open")
        await run.stream_text("\n```\n\nDone.")
        await run.gate("closed")
        run.complete()

    server.script = script
    open_tray(page, server)
    send(page, "show me code")
    stream = page.locator(".chat-bubble--streaming")
    blocks = stream.locator("pre code")
    expect(blocks).to_have_count(3)
    expect(blocks.nth(2)).to_contain_text("const x = 1;")
    # the closed block is coloured while the answer still streams; the open one is not
    expect(blocks.nth(0)).to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(0).locator(".hljs-keyword").first).to_have_text("def")
    assert blocks.nth(0).inner_text().rstrip("\n") == first
    expect(blocks.nth(1)).not_to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(2)).not_to_have_class(re.compile(r"\bhljs\b"))
    assert blocks.nth(2).locator("span").count() == 0
    server.open_gate("open")
    expect(stream).to_contain_text("Done.")
    expect(blocks.nth(2)).to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(2).locator(".hljs-keyword")).to_have_text("const")
    expect(stream.locator(".chat-cursor")).to_have_count(1)
    server.open_gate("closed")
    final = final_messages(page).last.locator("pre code")
    expect(page.locator(".chat-bubble--streaming")).to_have_count(0)
    expect(final.nth(0)).to_have_class(re.compile(r"\bhljs\b"))
    expect(final.nth(2)).to_have_class(re.compile(r"\bhljs\b"))
    expect(final.nth(1)).not_to_have_class(re.compile(r"\bhljs\b"))
    assert_clean(page)


MATH_TEXT = ("The area is $\\pi r^2$, it costs $5 and $10, and \\(a+b\\) is inline.\n\n$$\n\\int_0^1 x\\,dx = \\frac{1}{2}\n$$\n\n"
             "Not a link: $\\href{javascript:alert(1)}{click}$ and $\\url{https://evil.example}$.")


def test_math_is_typeset_while_streaming_and_in_the_final_answer(page: Page, server: FakeProtocolServer) -> None:
    """$...$, \\(...\\) and $$...$$ are typeset (KaTeX's MathML) as they stream and in the server's final HTML; money
    stays text; TeX cannot make a link; the TeX itself is kept in MathML's annotation, which is not shown."""
    from chat.rendering import render_markdown

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(MATH_TEXT.split("Not a link")[0])
        await run.gate("streamed")
        await run.stream_text("Not a link" + MATH_TEXT.split("Not a link")[1])
        run.complete(message_html=render_markdown(MATH_TEXT))

    server.script = script
    open_tray(page, server)
    send(page, "the area of a circle")
    stream = page.locator(".chat-bubble--streaming")
    expect(stream.locator(".math-display math")).to_have_count(1)
    expect(stream.locator(".math-inline math")).to_have_count(2)
    expect(stream).to_contain_text("it costs $5 and $10")
    server.open_gate("streamed")
    expect(page.locator(".chat-bubble--streaming")).to_have_count(0)
    final = final_messages(page).last
    bubble = final.locator(".chat-bubble")
    expect(bubble.locator(".math-inline math")).to_have_count(4)  # \href and \url as text, not links
    expect(bubble.locator(".math-display math")).to_have_attribute("display", "block")
    expect(bubble).to_contain_text("it costs $5 and $10")
    expect(bubble.locator("annotation").first).to_have_text("\\pi r^2")
    expect(bubble.locator("annotation").first).to_be_hidden()
    assert "\\frac" not in bubble.inner_text()  # typeset, not shown as TeX
    assert bubble.locator("a").count() == 0 and bubble.locator("[href]").count() == 0 and bubble.locator("[style]").count() == 0
    assert bubble.locator("math *").evaluate_all("nodes => nodes.every(n => n.namespaceURI === 'http://www.w3.org/1998/Math/MathML')")
    shot(page, "math")
    assert_clean(page)


def test_narrow_screen_is_full_width(browser: Browser, server: FakeProtocolServer) -> None:
    server.script = proposal_turn
    context = browser.new_context(viewport={"width": 390, "height": 760})
    pg = context.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.add_init_script(CSP_LISTENER)
    goto(pg, server)
    pg.get_by_role("button", name="Open chat").click()
    tray = pg.locator(".chat-tray")
    box = tray.bounding_box()
    # a bottom sheet across the whole width, up to the bottom edge, leaving the top of the page in view
    assert box and box["x"] == 0 and box["width"] == 390 and box["y"] > 0 and box["y"] + box["height"] == 760
    send(pg, "propose")
    panel = pg.get_by_role("dialog", name="Schema Proposal")
    expect(panel).to_be_visible()
    pbox = panel.bounding_box()
    assert pbox and pbox["width"] == 390
    shot(pg, "15_mobile_panel")
    pg.keyboard.press("Escape")
    shot(pg, "16_mobile_tray")
    context.close()
