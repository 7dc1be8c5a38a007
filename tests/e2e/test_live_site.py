"""The chat tray and the demo site in a real browser, against the real live server.

Debian's chromium (Playwright) drives `manage.py runserver` (daphne: HTTP + websocket + static)
started by the fixtures in conftest.py, logged in through the real /login/ page as demo/demo, with
the offline model answering. Each test checks what the user sees and what the server stored
(read from the server's own SQLite file). Screenshots: artifacts/screenshots/live_*.png.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, WebSocketRoute, expect

from .conftest import LiveServer, screenshot, watched_page
from .hostile_provider import REMOTE_FRAME, REMOTE_IMAGE, REMOTE_IMAGE_2

pytestmark = pytest.mark.e2e


WIDE = {"width": 1366, "height": 900}
NARROW = {"width": 390, "height": 844}
TIMEOUT_MS = 15_000

# Remembers every text the connection banner showed (it is up only while the socket reconnects).
CONNECTION_RECORDER = """
window.__connectionTexts = [];
new MutationObserver(() => {
  const el = document.querySelector('.chat-connection');
  if (el && !el.hidden && el.textContent) window.__connectionTexts.push(el.textContent);
}).observe(document, {childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ['hidden']});
"""

expect.set_options(timeout=TIMEOUT_MS)


class WsProxy:
    """Sits between the tray and the real server (page.route_web_socket): records frames both ways,
    can hold server events of chosen types (and all after them, to keep order) until released, and
    can cut the current connection as a network drop would."""

    def __init__(self) -> None:
        self.routes: list[WebSocketRoute] = []
        self.to_server: list[dict[str, Any]] = []
        self.to_page: list[dict[str, Any]] = []
        self.hold_types: set[str] = set()
        self.held: list[tuple[WebSocketRoute, str]] = []

    def attach(self, page: Page) -> "WsProxy":
        page.route_web_socket(re.compile(r"/api/ws/$"), self._handle)
        return self

    def _handle(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        self.routes.append(ws)

        def from_server(message: str | bytes) -> None:
            data = json.loads(message)
            if self.held or data.get("type") in self.hold_types:
                self.held.append((ws, message))
                return
            self.to_page.append(data)
            ws.send(message)

        def from_page(message: str | bytes) -> None:
            self.to_server.append(json.loads(message))
            server.send(message)

        server.on_message(from_server)
        ws.on_message(from_page)

    def held_types(self) -> list[str]:
        return [json.loads(m)["type"] for _, m in self.held]

    def release(self) -> None:
        """Stop holding and deliver what was held, in order (on the connection it arrived on)."""
        self.hold_types = set()
        held, self.held = self.held, []
        for ws, message in held:
            self.to_page.append(json.loads(message))
            ws.send(message)

    def cut(self) -> None:
        """Close the current connection (both sides), as a network drop would."""
        self.routes[-1].close(code=4000, reason="e2e: connection cut")

    def sent(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.to_server if f.get("type") == kind]


# ---- fixtures and helpers --------------------------------------------------------------------------


def login(browser: Browser, server: LiveServer, username: str = "demo") -> dict[str, Any]:
    """Sign in through the real login form (demo/demo by default); the session is reused by later contexts."""
    if username not in server.sessions:
        context = browser.new_context(viewport=WIDE)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{server.url}/")
        expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(username)  # demo_setup: password == username
        page.locator("#login-submit").click()
        expect(page).to_have_url(f"{server.url}/")
        expect(page.locator(".site-user__name")).to_have_text(username)
        server.sessions[username] = context.storage_state()
        context.close()
    return server.sessions[username]


@pytest.fixture
def open_page(chromium: Browser) -> Iterator[Callable[..., Page]]:
    """open_page(server, path="/", viewport=WIDE, user="demo") -> a logged-in page; errors and CSP violations recorded."""
    contexts: list[BrowserContext] = []
    log_offsets: dict[str, tuple[LiveServer, int]] = {}

    def make(server: LiveServer, path: str = "/", viewport: dict[str, int] = WIDE, goto: bool = True, user: str = "demo") -> Page:
        log_offsets.setdefault(server.name, (server, server.log_size()))
        context = chromium.new_context(viewport=viewport, storage_state=login(chromium, server, user))
        contexts.append(context)
        page = watched_page(context, TIMEOUT_MS)
        page.add_init_script(CONNECTION_RECORDER)
        if goto:
            page.goto(server.url + path)
            expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
        return page

    yield make
    for context in contexts:
        context.close()
    # Whatever the browser saw, the server must not have logged a crash meanwhile.
    for server, offset in log_offsets.values():
        log = server.log_since(offset)
        assert "Traceback" not in log, f"server {server.name} logged an exception:\n{log[-4000:]}"


def shot(page: Page, name: str) -> None:
    screenshot(page, f"live_{name}")


def open_tray(page: Page) -> None:
    page.get_by_role("button", name="Open chat").click()
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page.get_by_label("Message")).to_be_focused()


def send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def final_messages(page: Page) -> Locator:
    return page.locator(".chat-msg--assistant:not(.chat-msg--live)")


def wait_idle(page: Page) -> None:
    """The turn is over: the live turn is gone and Send is back."""
    expect(page.locator(".chat-msg--live")).to_have_count(0)
    expect(page.locator(".chat-send-btn")).to_be_visible()


def ask(page: Page, text: str, replies_before: int | None = None) -> Locator:
    """Send `text` and return the final assistant message that answers it."""
    before = final_messages(page).count() if replies_before is None else replies_before
    send(page, text)
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    return final_messages(page).last


def chips(page: Page) -> Locator:
    return page.get_by_role("group", name="Suggested replies").get_by_role("button")


def actions(page: Page) -> Locator:
    return page.get_by_role("group", name="Suggested actions")


def panel(page: Page) -> Locator:
    return page.locator(".chat-panel")


def assert_clean(page: Page) -> None:
    violations = page.evaluate("window.__csp")
    assert violations == [], f"CSP violations: {violations}"
    assert page.errors == [], page.errors  # type: ignore[attr-defined]


def conversation_id(page: Page) -> int:
    """The conversation the tray is showing (it keeps it in sessionStorage across navigations)."""
    value = page.evaluate("JSON.parse(sessionStorage.getItem('chat-tray:v1') || '{}').conversationId")
    assert isinstance(value, int), value
    return value


def demo_id(server: LiveServer) -> int:
    return server.query("SELECT id FROM auth_user WHERE username = 'demo'")[0][0]


def stream_id(server: LiveServer, name: str) -> int:
    return server.query("SELECT id FROM pagechat_demo_researchstream WHERE name = ? AND owner_id = ?", name, demo_id(server))[0][0]


# ---- 1 + 8: home -> chips -> form payload -> server action (DB) -> client action (navigate) -----------


def test_home_create_stream_flow_server_and_client_actions(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/")
    before = site_server.query("SELECT count(*) FROM pagechat_demo_researchstream WHERE name = 'Oncology Intelligence'")[0][0]
    assert before == 0

    # The page's own prompt button opens the tray and sends its data-chat-prompt (instead of following the link).
    page.locator("#home-create-with-assistant").click()
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page).to_have_url(f"{site_server.url}/")
    expect(page.locator(".chat-bubble--user")).to_have_text("Help me create a research stream")
    expect(chips(page)).to_have_text(["Oncology", "Cardiology", "Neurology", "Immunology"])
    wait_idle(page)
    expect(page.locator(".chat-badge--offline")).to_have_text("Offline model")  # the header says which model answers, once
    assert "Offline model" not in page.locator(".chat-log").inner_text()
    shot(page, "01_home_chips")

    # A chip sends its value as value_selected; the form payload opens in the floating panel.
    chips(page).get_by_text("Oncology", exact=True).click()
    expect(page.locator(".chat-bubble--user").last).to_have_text("oncology research")
    expect(panel(page)).to_be_visible()
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Research stream preview")
    expect(panel(page)).to_contain_text("Oncology Intelligence")
    wait_idle(page)
    expect(final_messages(page).last.locator(".chat-view-payload")).to_be_visible()
    shot(page, "02_home_form_panel")

    # Server action: the signed button goes back over the socket and the page's handler creates the stream.
    actions(page).get_by_role("button", name="Accept & Create stream").click()
    reply = final_messages(page).last
    expect(reply).to_contain_text("Created Oncology Intelligence")
    wait_idle(page)
    row = site_server.wait_for_row(
        "SELECT id, report_frequency FROM pagechat_demo_researchstream WHERE name = 'Oncology Intelligence' AND owner_id = ?", demo_id(site_server)
    )
    new_id, frequency = row
    assert frequency == "weekly"
    assert site_server.query("SELECT count(*) FROM pagechat_demo_channel WHERE stream_id = ?", new_id)[0][0] == 2
    kinds = [r[0] for r in site_server.query(
        "SELECT interaction_type FROM pagechat_message WHERE conversation_id = ? AND role = 'user' ORDER BY id", conversation_id(page))]
    assert kinds == ["text_input", "value_selected", "action_executed"]
    shot(page, "03_home_stream_created")

    # Client action: navigate to the new stream; the tray comes back open with the conversation.
    actions(page).get_by_role("button", name="View stream").click()
    expect(page).to_have_url(f"{site_server.url}/research-streams/{new_id}/")
    expect(page.locator("#stream-title")).to_have_text("Oncology Intelligence")
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(final_messages(page).last).to_contain_text("Created Oncology Intelligence")
    assert_clean(page)


# ---- 2: streams list -> stream ideas and portfolio insights in the panel ------------------------------


def test_streams_list_suggestions_and_insights(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/research-streams/")
    open_tray(page)
    ask(page, "suggest stream ideas about immunology")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Stream ideas")
    expect(panel(page)).to_contain_text("Immunology Biomarkers")
    expect(panel(page)).to_contain_text("Immunology Regulatory Watch")
    shot(page, "04_streams_ideas")

    ask(page, "analyze my portfolio coverage and gaps")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Portfolio insights")
    expect(panel(page)).to_contain_text("Gaps")
    expect(panel(page)).to_contain_text("Recommendation")
    # The earlier card can be reopened from its message.
    final_messages(page).first.get_by_role("button", name="View stream ideas").click()
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Stream ideas")
    panel(page).get_by_role("button", name="Close panel").click()
    expect(panel(page)).to_be_hidden()
    assert_clean(page)


def test_a_tool_that_changes_data_runs_only_after_approve(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    """The offline model calls the approval-gated `rename_stream`: Deny changes nothing, Approve renames (the demo's
    real tool, the real server, the stream's row read back)."""
    sid = stream_id(site_server, "CRISPR Therapeutics Watch")

    def name() -> str:
        return site_server.query("SELECT name FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0]

    page = open_page(site_server, "/research-streams/")
    open_tray(page)
    for approve, new_name in ((False, "Gene Editing Denied"), (True, "Gene Editing Watch"), (True, "CRISPR Therapeutics Watch")):
        before = final_messages(page).count()
        send(page, f"Rename stream {sid} to {new_name}")
        card = page.get_by_role("group", name="Approval needed: Rename stream")  # its title (issue 37), not rename_stream
        expect(card).to_contain_text(f"to “{new_name}”?")  # the tool's sentence, not the input's JSON
        assert name() != new_name  # nothing ran before the click
        card.get_by_role("button", name="Approve" if approve else "Deny").click()
        expect(final_messages(page)).to_have_count(before + 1)
        wait_idle(page)
        said = "did not approve “Rename stream”" if not approve else f"Renamed the stream to '{new_name}'."
        expect(final_messages(page).last).to_contain_text(said)
        assert name() == (new_name if approve else "CRISPR Therapeutics Watch")
    assert_clean(page)


# ---- 3: new stream -> template Accept fills the form, topic suggestions Accept adds topics ---------------


def test_new_stream_template_and_topics_fill_the_form(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/research-streams/new/")
    expect(page.locator("#field-stream-name")).to_have_value("")
    open_tray(page)
    ask(page, "give me a stream template about immunotherapy")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Stream template")
    expect(panel(page)).to_contain_text("Immunotherapy Monitor")
    shot(page, "05_new_stream_template")
    panel(page).get_by_role("button", name="Accept").click()
    expect(panel(page)).to_be_hidden()
    expect(page.locator("#field-stream-name")).to_have_value("Immunotherapy Monitor")
    expect(page.locator("#field-purpose")).to_have_value("Follow advances in immunotherapy")
    expect(page.locator("#field-report-frequency")).to_have_value("weekly")
    expect(page.locator("#field-topics")).to_have_value("immunotherapy\nimmunotherapy clinical trials\nimmunotherapy drug approvals")
    expect(page.locator("#page-notice")).to_contain_text("Template applied")
    expect(final_messages(page).last.locator(".chat-payload-outcome")).to_have_text("accepted")

    ask(page, "suggest topic keywords for checkpoint inhibitors")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Topic suggestions")
    panel(page).get_by_role("button", name="Accept").click()
    # Added to the topics already there, without duplicates.
    expect(page.locator("#field-topics")).to_have_value(
        "immunotherapy\nimmunotherapy clinical trials\nimmunotherapy drug approvals\n"
        "checkpoint inhibitors\ncheckpoint inhibitors biomarkers\ncheckpoint inhibitors therapy resistance"
    )
    shot(page, "06_new_stream_filled")
    assert_clean(page)


# ---- 4: edit stream tabs -> schema / retrieval proposals; Accept applies, Reject leaves the page alone ----


def test_edit_stream_semantic_and_retrieval_proposals(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    sid = stream_id(site_server, "Lung Cancer Immunotherapy Monitor")
    page = open_page(site_server, f"/research-streams/{sid}/?tab=semantic")
    purpose_before = page.locator("#field-purpose").input_value()
    assert purpose_before.startswith("Track new evidence on immunotherapy")
    open_tray(page)
    ask(page, "propose a schema about tumor microenvironment")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Schema proposal")
    shot(page, "07_edit_schema_proposal")
    panel(page).get_by_role("button", name="Accept").click()
    expect(page.locator("#field-purpose")).to_have_value("Track advances in tumor microenvironment")
    expect(page.locator("#field-topics")).to_have_value("tumor microenvironment\ntumor microenvironment biomarkers")
    expect(page.locator("#field-stream-name")).to_have_value("Lung Cancer Immunotherapy Monitor")  # not proposed: unchanged
    # Accepting fills the form only; the stream is saved when the user saves the form.
    assert site_server.query("SELECT purpose FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0] == purpose_before

    # Leaving the tab with the accepted, unsaved changes asks first; staying keeps them.
    questions: list[str] = []
    page.once("dialog", lambda d: (questions.append(d.message), d.dismiss()))
    page.locator("#tab-retrieval").click()
    expect(page).to_have_url(re.compile(r"\?tab=semantic$"))
    assert questions == ["This tab has unsaved changes. Leave without saving them?"]
    expect(page.locator("#field-purpose")).to_have_value("Track advances in tumor microenvironment")

    # Retrieval tab (a navigation: the tray keeps the conversation). Reject first: nothing changes.
    page.once("dialog", lambda d: d.accept())
    page.locator("#tab-retrieval").click()
    expect(page).to_have_url(re.compile(r"\?tab=retrieval$"))
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(final_messages(page)).to_have_count(1)  # the conversation is restored from REST
    queries_before = page.locator("#field-queries").input_value()
    assert "osimertinib resistance MET amplification" in queries_before
    reply = ask(page, "propose retrieval queries for tumor microenvironment")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Retrieval proposal")
    panel(page).get_by_role("button", name="Reject").click()
    expect(panel(page)).to_be_hidden()
    expect(page.locator("#page-notice")).to_have_text("Proposal dismissed.")
    expect(reply.locator(".chat-payload-outcome")).to_have_text("rejected")
    expect(page.locator("#field-queries")).to_have_value(queries_before)
    expect(page.locator("#field-sources")).to_have_value("pubmed\nclinicaltrials.gov")

    # Changing one's mind: reopen the proposal from its message and accept it.
    reply.get_by_role("button", name="View retrieval proposal").click()
    panel(page).get_by_role("button", name="Accept").click()
    expect(page.locator("#field-queries")).to_have_value("tumor microenvironment AND clinical trial\ntumor microenvironment biomarker")
    expect(page.locator("#field-sources")).to_have_value("PubMed")
    expect(reply.locator(".chat-payload-outcome")).to_have_text("accepted")
    shot(page, "08_edit_retrieval_accepted")
    # The server resolved tab-specific capabilities: the retrieval turn offered the preview_query tool.
    tools = site_server.query(
        "SELECT diagnostics FROM pagechat_run WHERE assistant_message_id = ?", int(reply.get_attribute("data-message-id"))
    )[0][0]
    assert "preview_query" in json.loads(tools)["tools"]

    # A proposal for another tab is not applied here, and is not marked accepted.
    schema_reply = final_messages(page).first
    schema_reply.get_by_role("button", name="View schema proposal").click()
    panel(page).get_by_role("button", name="Accept").click()
    expect(page.locator("#page-notice")).to_have_text("Open the semantic tab to apply this proposal.")
    expect(panel(page)).to_be_visible()  # still open: the user can switch tabs or reject it
    # its outcome is still the one from the first Accept on its own tab (outcomes are stored with the message)
    expect(schema_reply.locator(".chat-payload-outcome")).to_have_text("accepted")
    expect(page.locator("#field-queries")).to_have_value("tumor microenvironment AND clinical trial\ntumor microenvironment biomarker")
    panel(page).get_by_role("button", name="Close panel").click()
    expect(panel(page)).to_be_hidden()

    # Presentation tab: categories.
    page.once("dialog", lambda d: d.accept())  # the accepted queries were not saved: leave anyway
    page.locator("#tab-presentation").click()
    expect(page).to_have_url(re.compile(r"\?tab=presentation$"))
    expect(final_messages(page)).to_have_count(2)
    ask(page, "propose presentation categories for tumor microenvironment")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Presentation categories")
    panel(page).get_by_role("button", name="Accept").click()
    expect(page.locator("#field-categories")).to_have_value(
        "Tumor Microenvironment Clinical Trials: Trial results\nTumor Microenvironment Mechanisms: Basic science\n"
        "Regulatory: Approvals and guidance"
    )
    assert_clean(page)


# ---- 5: reports -> a tool with an amber progress card, results panel, then an article card --------------


def test_reports_search_progress_results_and_article(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/", goto=False)
    proxy = WsProxy().attach(page)
    page.goto(site_server.url + "/reports/")
    open_tray(page)
    proxy.hold_types = {"tool_complete"}  # keep the tool "running" until the card has been seen
    send(page, "search articles about CRISPR")
    progress = page.locator(".chat-progress")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Search articles")  # the tool's title (issue 37)
    expect(progress.locator(".chat-progress__message")).to_have_text(re.compile(r"Found \d+ articles, ranking…"))
    expect(progress.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "70")
    color = progress.evaluate("el => getComputedStyle(el).backgroundColor")
    r, g, b = (int(x) for x in re.findall(r"\d+", color)[:3])
    assert r > 200 and g > 150 and b < g, f"tool progress card is not amber: {color}"
    shot(page, "09_reports_tool_progress")
    assert proxy.held_types()[0] == "tool_complete"
    proxy.release()

    reply = final_messages(page).last
    expect(reply).to_be_visible()
    wait_idle(page)
    expect(progress).to_have_count(0)
    expect(reply.locator(".chat-tool-card")).to_contain_text("Search articles")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Search results")
    links = panel(page).locator("a.chat-article__title")
    expect(links.first).to_be_visible()
    assert links.count() >= 3
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert all(re.fullmatch(r"/articles/\d+/", h) for h in hrefs), hrefs
    assert any("crispr" in links.nth(i).inner_text().lower() for i in range(links.count()))
    shot(page, "10_reports_results")
    article_id = hrefs[0].split("/")[2]
    # The tool ran once for this conversation, and its call was stored with the user's subject as the query.
    calls = site_server.query(
        "SELECT t.name, t.input, t.status FROM pagechat_toolcall t JOIN pagechat_run r ON r.id = t.run_id WHERE r.conversation_id = ?",
        conversation_id(page),
    )
    assert [(name, status) for name, _, status in calls] == [("search_articles", "ok")]
    assert json.loads(calls[0][1])["query"] == "CRISPR"

    ask(page, f"show me article {article_id}")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Article")
    title = site_server.query("SELECT title FROM pagechat_demo_article WHERE external_id = ?", article_id)[0][0]
    card = panel(page).locator("article.chat-article")
    expect(card.locator(".chat-article__title")).to_have_text(title)
    expect(card.locator(".chat-article__abstract")).to_be_visible()
    expect(card.get_by_role("link", name=title)).to_have_attribute("href", f"/articles/{article_id}/")
    shot(page, "11_reports_article_card")
    card.get_by_role("link", name=title).click()
    expect(page).to_have_url(f"{site_server.url}/articles/{article_id}/")
    assert_clean(page)


# ---- 6: stop -> partial text marked stopped, run cancelled in the DB --------------------------------------


def test_stop_marks_partial_reply_and_cancels_the_run(open_page: Callable[..., Page], slow_server: LiveServer) -> None:
    page = open_page(slow_server, "/")
    open_tray(page)
    send(page, "hello there, tell me what you can do")
    streaming = page.locator(".chat-bubble--streaming")
    expect(streaming).to_contain_text("the offline model")
    stop = page.get_by_role("button", name="Stop generating")
    expect(stop).to_be_visible()
    stop.click()
    reply = final_messages(page).last
    expect(reply.locator(".chat-tag--stopped")).to_have_text("stopped")
    wait_idle(page)
    shot(page, "12_stopped")
    conversation = conversation_id(page)
    run_status, message_status, content = slow_server.wait_for_row(
        "SELECT r.status, m.status, m.content FROM pagechat_run r JOIN pagechat_message m ON m.id = r.assistant_message_id "
        "WHERE r.conversation_id = ? AND r.status != 'running'", conversation,
    )
    assert (run_status, message_status) == ("cancelled", "cancelled")
    # What the user saw is what was saved, and it is a part of the reply, not all of it.
    shown = normalize(reply.locator(".chat-bubble").inner_text())
    assert shown == normalize(content.replace("**", "")), (shown, content)
    assert "Try one of these" not in shown

    # The conversation takes a new turn at once (the cancelled run no longer holds it), which can be stopped too.
    send(page, "hi")
    expect(streaming).to_contain_text("the offline model")
    page.get_by_role("button", name="Stop generating").click()
    expect(final_messages(page)).to_have_count(2)
    expect(final_messages(page).last.locator(".chat-tag--stopped")).to_be_visible()
    wait_idle(page)
    runs_of = "SELECT status FROM pagechat_run WHERE conversation_id = ? ORDER BY created_at"
    wait_for(page, lambda: [r[0] for r in slow_server.query(runs_of, conversation)] == ["cancelled", "cancelled"],
             "both runs of the conversation to be cancelled")
    assert_clean(page)


def normalize(text: str) -> str:
    return " ".join(text.split())


# ---- 7: the connection drops mid-stream -> reconnect + resume; the text appears exactly once -------------


def test_reconnect_mid_stream_resumes_without_duplicates(open_page: Callable[..., Page], slow_server: LiveServer) -> None:
    page = open_page(slow_server, "/", goto=False)
    proxy = WsProxy().attach(page)
    page.goto(slow_server.url + "/")
    open_tray(page)
    proxy.hold_types = {"complete"}  # look at the streamed text before the final message replaces it
    send(page, "hello again, what can you do here")
    streaming = page.locator(".chat-bubble--streaming")
    expect(streaming).to_contain_text("I'm the offline model")
    assert "complete" not in proxy.held_types()  # still streaming when the connection drops
    proxy.cut()

    # The tray reconnects on its own and resumes the run after the last seq it applied.
    resume = wait_for(page, lambda: proxy.sent("chat.resume"), "a chat.resume frame")[0]
    assert len(proxy.routes) >= 2
    run_id = resume["run_id"]
    # Frames still in flight when the connection dropped were lost; the resume asks for them again.
    forwarded_before_cut = [e["seq"] for e in proxy.to_page if e.get("run_id") == run_id]
    assert 1 <= resume["after_seq"] <= max(forwarded_before_cut)
    assert "Connection lost — reconnecting…" in page.evaluate("window.__connectionTexts")
    wait_for(page, lambda: "complete" in proxy.held_types(), "the run to complete")
    content = slow_server.wait_for_row(
        "SELECT m.content FROM pagechat_run r JOIN pagechat_message m ON m.id = r.assistant_message_id "
        "WHERE r.id = ? AND r.status = 'completed'", run_id.replace("-", ""),
    )[0]
    # The live bubble shows the whole reply exactly once: no replayed delta applied twice, none missing.
    expected = normalize(content.replace("**", ""))
    assert "SUGGESTED_VALUES" not in content
    wait_for(page, lambda: normalize(streaming.inner_text()) == expected, "the streamed text to equal the saved text")
    delivered = [e["seq"] for e in proxy.to_page if e.get("run_id") == run_id]
    assert sorted(set(delivered)) == list(range(1, max(delivered) + 1))  # gapless across the two connections
    shot(page, "13_reconnected_streaming")
    proxy.release()

    reply = final_messages(page).last
    expect(reply.locator(".chat-bubble")).to_be_visible()
    wait_idle(page)
    assert normalize(reply.locator(".chat-bubble").inner_text()) == expected
    assert page.locator(".chat-log").inner_text().count("I'm the offline model") == 1
    expect(final_messages(page)).to_have_count(1)
    expect(page.locator(".chat-connection:not(.chat-offline)")).to_be_hidden()
    shot(page, "14_reconnected_final")
    assert_clean(page)


def wait_for(page: Page, check: Callable[[], Any], what: str, timeout: float = TIMEOUT_MS / 1000) -> Any:
    """Poll `check` until it returns something truthy; waiting on the page lets Playwright deliver events."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        page.wait_for_timeout(50)


# ---- 9: hostile model output executes, loads and navigates nothing --------------------------------------


# (the tray's own icons are svg.chat-icon, built by the tray; model output never yields an svg at all)
FORBIDDEN_IN_MESSAGES = "script, img, iframe, frame, object, embed, style, link, svg:not(.chat-icon), math, form, input, base, meta, [onerror], [onload], [onmouseover], [ontoggle], [style], [srcdoc]"


def assert_inert(page: Page) -> None:
    """Nothing the model wrote became active in the tray, and nothing ran."""
    assert page.evaluate("typeof window.__pwned") == "undefined"
    log = page.locator(".chat-log")
    assert log.locator(FORBIDDEN_IN_MESSAGES).count() == 0, log.evaluate("el => el.innerHTML")
    hrefs = log.locator("a[href]").evaluate_all("els => els.map(a => a.getAttribute('href'))")
    assert all(re.match(r"^(https?://|/|mailto:)", h) for h in hrefs), hrefs
    expect(page.locator("body")).to_be_visible()  # the model's <style> did not hide the page


def test_hostile_model_output_is_inert(open_page: Callable[..., Page], hostile_server: LiveServer) -> None:
    page = open_page(hostile_server, "/reports/", goto=False)
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    proxy = WsProxy().attach(page)
    page.goto(hostile_server.url + "/reports/")
    open_tray(page)

    # While streaming: the raw markup is shown as text, nothing of it runs.
    proxy.hold_types = {"complete"}
    send(page, "anything at all")
    streaming = page.locator(".chat-bubble--streaming")
    wait_for(page, lambda: "complete" in proxy.held_types(), "the hostile reply to finish streaming")
    expect(streaming).to_contain_text("Hostile reply ends.")
    expect(streaming).to_contain_text("<script>window.__pwned=1</script>")
    expect(streaming).to_contain_text('<img src=x onerror="window.__pwned=2">')
    assert "SUGGESTED_ACTIONS" not in streaming.inner_text()
    streaming.get_by_text("hover me").first.hover()
    assert_inert(page)
    shot(page, "15_hostile_streaming")
    proxy.release()

    # Final message (server-sanitized HTML, sanitized again in the browser).
    reply = final_messages(page).last
    expect(reply).to_contain_text("Hostile reply ends.")
    wait_idle(page)
    expect(reply.locator("strong")).to_have_text("bold but harmless")
    expect(reply).to_contain_text("<script>window.__pwned=1</script>")  # shown as text, not run
    # javascript:/data: markdown links stay literal text (no <a> at all), raw HTML is escaped.
    expect(reply).to_contain_text("[click](javascript:window.__pwned=3)")
    expect(reply.locator("a")).to_have_count(0)
    reply.get_by_text("hover me").first.hover()
    # Suggestions: a hostile chip label is plain text; javascript: actions are refused.
    chip = chips(page).first
    expect(chip).to_have_text('<img src=x onerror="window.__pwned=9">')
    url = page.url
    actions(page).get_by_role("button", name="Evil navigate").click()
    expect(page.locator(".chat-notice")).to_have_text("Refusing to navigate outside this site.")
    actions(page).get_by_role("button", name="Evil download").click()
    expect(page.locator(".chat-notice")).to_have_text("Refusing to download from another site.")
    assert page.url == url
    assert_inert(page)
    shot(page, "16_hostile_final")

    # The same conversation reloaded over REST from the History list.
    page.get_by_role("button", name="History").click()
    conversation = page.locator(".chat-conversation").first
    expect(conversation).to_be_visible()
    conversation.click()
    expect(final_messages(page)).to_have_count(1)
    expect(final_messages(page).last).to_contain_text("Hostile reply ends.")
    final_messages(page).last.get_by_text("hover me").first.hover()
    assert_inert(page)
    # And after a full page reload (the tray restores the conversation from REST).
    page.reload()
    expect(final_messages(page).last).to_contain_text("Hostile reply ends.")
    assert_inert(page)
    shot(page, "17_hostile_reloaded")

    remote = [u for u in requests if u.startswith("http://127.0.0.1:9/") or u.startswith("javascript:") or u.startswith("data:text")]
    assert remote == [], remote
    assert REMOTE_IMAGE not in requests and REMOTE_IMAGE_2 not in requests and REMOTE_FRAME not in requests
    assert dialogs == []
    stored = hostile_server.query("SELECT content FROM pagechat_message WHERE role = 'assistant' ORDER BY id DESC LIMIT 1")[0][0]
    assert "<script>window.__pwned=1</script>" in stored  # stored as written; made safe on the way out
    assert page.evaluate("window.__csp") == []
    assert page.errors == []  # type: ignore[attr-defined]


# ---- keyboard, offline note, narrow screen, staff diagnostics --------------------------------------------


def test_keyboard_offline_note_and_escape(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    launcher = page.get_by_role("button", name="Open chat")
    # Keyboard only: the launcher is the page's last control, so Shift+Tab from the top reaches it.
    page.keyboard.press("Shift+Tab")
    expect(launcher).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".chat-tray")).to_be_visible()
    box = page.get_by_label("Message")
    expect(box).to_be_focused()
    expect(page.locator(".chat-badge--offline")).to_have_text("Offline model")  # named once, in the header
    expect(page.locator(".chat-offline-note")).to_have_count(0)
    expect(page.locator(".chat-welcome")).to_contain_text("Reports page")  # the page's title, not its name
    shot(page, "18_welcome_offline_note")
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    expect(box).to_have_value("first line\nsecond line")
    page.keyboard.press("Enter")
    expect(page.locator(".chat-bubble--user")).to_have_text("first line\nsecond line")
    expect(box).to_have_value("")
    reply = final_messages(page).last
    expect(reply).to_contain_text("I'm the offline model")
    wait_idle(page)
    # Chips are real buttons: Enter on a focused chip sends it.
    chip = chips(page).first
    chip.focus()
    page.keyboard.press("Enter")
    expect(final_messages(page)).to_have_count(2)
    wait_idle(page)
    page.keyboard.press("Escape")
    expect(page.locator(".chat-tray")).to_be_hidden()
    expect(launcher).to_be_focused()
    assert_clean(page)


def test_the_page_preloads_exactly_the_modules_the_tray_loads(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    """Every module the tray imports at start is announced by a modulepreload link (one round trip for all, not one
    per level of imports), each is fetched once, and nothing is preloaded that the tray does not load."""
    page = open_page(site_server, "/reports/", goto=False)
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "/static/chat/" in r.url and r.url.endswith(".js") else None)
    page.goto(site_server.url + "/reports/")
    expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
    page.wait_for_load_state("networkidle")
    preloaded = page.locator('link[rel="modulepreload"]').evaluate_all("links => links.map(l => l.href)")
    assert sorted(fetched) == sorted({*fetched}), fetched  # none twice
    # the modules, tray.js itself, and the head's small classic script (the open state before the first paint)
    assert sorted(fetched) == sorted([*preloaded, site_server.url + "/static/chat/tray.js", site_server.url + "/static/chat/tray-head.js"])
    assert_clean(page)


def test_narrow_screen(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/", viewport=NARROW)
    open_tray(page)
    tray = page.locator(".chat-tray")
    box = tray.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= NARROW["width"] + 0.5, box
    ask(page, "search articles about CRISPR")
    expect(panel(page)).to_be_visible()
    pbox = panel(page).bounding_box()
    assert pbox is not None and pbox["x"] >= 0 and pbox["x"] + pbox["width"] <= NARROW["width"] + 0.5, pbox
    shot(page, "19_narrow_results_panel")
    panel(page).get_by_role("button", name="Close panel").click()
    expect(panel(page)).to_be_hidden()
    expect(page.get_by_label("Message")).to_be_visible()
    expect(final_messages(page).last.locator(".chat-tool-card")).to_be_visible()
    # Nothing scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    shot(page, "20_narrow_tray")
    assert_clean(page)


def test_staff_diagnostics_view(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/research-streams/")
    open_tray(page)
    reply = ask(page, "analyze my portfolio coverage and gaps")
    panel(page).get_by_role("button", name="Close panel").click()
    reply.get_by_role("button", name="Diagnostics").click()
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Diagnostics")
    sections = panel(page).locator("details.chat-diagnostics__section > summary")
    expect(sections.first).to_be_visible()
    names = [n.lower() for n in sections.all_inner_texts()]
    assert {"model", "tools", "system prompt", "usage"} <= set(names), names
    prompt = panel(page).locator("details", has=page.locator("summary", has_text=re.compile("system prompt", re.I)))
    prompt.locator("summary").click()
    expect(prompt.locator("pre")).to_contain_text("Lung Cancer Immunotherapy Monitor")  # the page's context builder
    shot(page, "21_staff_diagnostics")
    # after a reload the answer comes from REST: its diagnostics come with it
    page.reload()
    expect(page.locator(".chat-tray")).to_be_visible()  # the tray stays open across a reload
    reloaded = final_messages(page).last
    reloaded.get_by_role("button", name="Diagnostics").click()
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Diagnostics")
    expect(panel(page).locator("details.chat-diagnostics__section > summary").first).to_be_visible()
    assert_clean(page)


def test_plain_user_gets_no_diagnostics_and_only_their_own_context(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/research-streams/", user="alice", goto=False)
    proxy = WsProxy().attach(page)
    page.goto(site_server.url + "/research-streams/")
    open_tray(page)
    reply = ask(page, "analyze my portfolio coverage and gaps")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Portfolio insights")
    expect(reply.get_by_role("button", name="Diagnostics")).to_have_count(0)
    (complete,) = [e for e in proxy.to_page if e["type"] == "complete"]
    assert "diagnostics" not in complete["payload"]  # staff only, not merely hidden by the tray
    prompt = json.loads(site_server.wait_for_row(
        "SELECT diagnostics FROM pagechat_run WHERE conversation_id = ? AND status = 'completed'", conversation_id(page))[0])["system_prompt"]
    assert "Heart Failure Therapies" in prompt and "Lung Cancer Immunotherapy Monitor" not in prompt
    assert_clean(page)


def test_your_preferences_are_saved_and_go_with_every_turn(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    """History -> "Your preferences": saved over REST, shown again on another page, in the next turn's prompt as the
    user's data; cleared again at the end (the site is shared by the other tests)."""
    page = open_page(site_server, "/", user="alice")
    open_tray(page)
    page.get_by_role("button", name="History").click()
    page.get_by_role("button", name="Your preferences").click()
    box = page.get_by_label("What should the assistant know about you, or keep in mind in every answer?")
    expect(box).to_be_focused()
    box.fill("I am a cardiologist. Keep answers short.")
    expect(page.locator("#chat-preferences-count")).to_have_text("40 / 1,500 characters")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".chat-notice")).to_have_text("Preferences saved. They apply from your next message.")
    expect(page.get_by_role("button", name="Your preferences")).to_be_focused()  # back in the list
    alice = site_server.query("SELECT id FROM auth_user WHERE username = 'alice'")[0][0]
    assert site_server.query("SELECT instructions FROM pagechat_userpreferences WHERE user_id = ?", alice) == [
        ("I am a cardiologist. Keep answers short.",)]

    page.goto(site_server.url + "/reports/")  # another page: the same preferences, and the next turn carries them
    expect(page.locator(".chat-tray")).to_be_visible()  # it was open: it opens again on the next page
    page.get_by_role("button", name="New chat").click()
    ask(page, "hello")
    prompt = json.loads(site_server.wait_for_row(
        "SELECT diagnostics FROM pagechat_run WHERE conversation_id = ? AND status = 'completed'", conversation_id(page))[0])["system_prompt"]
    assert '# USER PREFERENCES' in prompt and '<data source="user_preferences">\nI am a cardiologist. Keep answers short.\n</data>' in prompt
    page.get_by_role("button", name="History").click()
    page.get_by_role("button", name="Your preferences").click()
    expect(box).to_have_value("I am a cardiologist. Keep answers short.")
    box.fill("")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".chat-notice")).to_contain_text("Preferences saved")
    assert site_server.query("SELECT instructions FROM pagechat_userpreferences WHERE user_id = ?", alice) == [("",)]
    assert_clean(page)


def test_navigation_mid_stream_follows_the_run_on_the_next_page(open_page: Callable[..., Page], slow_server: LiveServer) -> None:
    page = open_page(slow_server, "/")
    open_tray(page)
    send(page, "hello, what is on this page")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("I'm the offline model")
    conversation = conversation_id(page)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Reports").click()
    expect(page).to_have_url(f"{slow_server.url}/reports/")
    # The tray comes back open on the new page, shows the question and follows the same run to its end.
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page.locator(".chat-bubble--user")).to_have_text("hello, what is on this page")
    reply = final_messages(page).last
    expect(reply).to_contain_text("Try one of these")
    wait_idle(page)
    content = slow_server.wait_for_row(
        "SELECT m.content FROM pagechat_run r JOIN pagechat_message m ON m.id = r.assistant_message_id "
        "WHERE r.conversation_id = ? AND r.status = 'completed'", conversation)[0]
    assert normalize(reply.locator(".chat-bubble").inner_text()) == normalize(content.replace("**", ""))
    assert page.locator(".chat-log").inner_text().count("I'm the offline model") == 1
    expect(final_messages(page)).to_have_count(1)
    assert conversation_id(page) == conversation
    assert_clean(page)
