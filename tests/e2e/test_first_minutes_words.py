"""Issue 37, items 3-5 in real Chromium: the welcome offers the page's starters (buttons that send), pages and tools are
named by their titles (no snake_case name is ever visible in the tray), and an approval says what it will do - the
tool's sentence with one "waiting" line, or labelled fields, never JSON.

On the demo (the live server, the offline model, the demo's tools) and on the test suite's host page (the tray
harness: its real tray template served by tests/e2e/fake_protocol_server.py, the events scripted as the server sends
them). Screenshots: artifacts/screenshots/words_*.png.
"""
from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from .conftest import LiveServer, screenshot, watched_page
from .fake_protocol_server import FakeProtocolServer, FakeRun

pytestmark = pytest.mark.e2e

WIDE = {"width": 1280, "height": 900}
TIMEOUT_MS = 15_000
SNAKE = re.compile(r"\b[a-z]+_[a-z_]+\b")  # an internal name: search_articles, streams_list, rename_stream
expect.set_options(timeout=TIMEOUT_MS)

# Every text the tray showed during a turn: its visible text (innerText) after each change, so a name shown for an
# instant (a progress card) is caught too.
TRAY_TEXTS = """
window.__trayTexts = [];
new MutationObserver(() => {
  const panel = document.querySelector('#chat-tray-panel');
  if (panel && !panel.hidden) window.__trayTexts.push(panel.innerText);
}).observe(document, {childList: true, subtree: true, characterData: true, attributes: true});
"""


def seen_names(page: Page) -> set[str]:
    """The snake_case words the tray showed since the page loaded (its visible text now included)."""
    texts = [*page.evaluate("window.__trayTexts"), page.locator("#chat-tray-panel").inner_text()]
    return {name for text in texts for name in SNAKE.findall(text)}


def final_messages(page: Page) -> Any:
    return page.locator(".chat-msg--assistant:not(.chat-msg--live)")


def wait_idle(page: Page) -> None:
    expect(page.locator(".chat-msg--live")).to_have_count(0)
    expect(page.locator(".chat-send-btn")).to_be_visible()


def send(page: Page, text: str) -> None:
    page.locator("[data-chat-tray] textarea.chat-input").fill(text)
    page.locator("[data-chat-tray] textarea.chat-input").press("Enter")


def open_tray(page: Page) -> None:
    page.locator("#chat-tray .chat-launcher").click()
    expect(page.locator(".chat-tray")).to_be_visible()


def assert_clean(page: Page) -> None:
    assert page.evaluate("window.__csp") == []
    assert page.errors == [], page.errors  # type: ignore[attr-defined]


# ---- the demo ---------------------------------------------------------------------------------------------------


def _login(browser: Browser, server: LiveServer, username: str = "demo") -> dict[str, Any]:
    """Sign in through the real login form; the session is kept on the server object for later contexts."""
    if username not in server.sessions:
        context = browser.new_context(viewport=WIDE)
        page = context.new_page()
        page.goto(f"{server.url}/login/")
        page.locator("#id_username").fill(username)
        page.locator("#id_password").fill(username)  # demo_setup: password == username
        page.locator("#login-submit").click()
        expect(page).to_have_url(f"{server.url}/")
        server.sessions[username] = context.storage_state()
        context.close()
    return server.sessions[username]


@pytest.fixture
def demo_page(chromium: Browser) -> Iterator[Callable[..., Page]]:
    """demo_page(server, path) -> a new tab of a logged-in demo user at `path`, recording what the tray shows."""
    contexts: list[BrowserContext] = []

    def make(server: LiveServer, path: str, user: str = "demo") -> Page:
        context = chromium.new_context(viewport=WIDE, storage_state=_login(chromium, server, user))
        contexts.append(context)
        page = watched_page(context, TIMEOUT_MS)
        page.add_init_script(TRAY_TEXTS)
        page.goto(server.url + path)
        expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
        return page

    yield make
    for context in contexts:
        context.close()


def _stream_id(server: LiveServer, name: str, owner: str = "demo") -> int:
    return server.query("SELECT s.id FROM pagechat_demo_researchstream s JOIN auth_user u ON u.id = s.owner_id "
                        "WHERE s.name = ? AND u.username = ?", name, owner)[0][0]


def test_every_demo_page_welcomes_with_its_title_and_starters_and_a_starter_sends(demo_page: Callable[..., Page],
                                                                                   site_server: LiveServer) -> None:
    sid = _stream_id(site_server, "CRISPR Therapeutics Watch")
    pages = {"/": "Home", "/research-streams/": "Research streams", "/research-streams/new/": "New research stream",
             f"/research-streams/{sid}/": "Stream settings", "/reports/": "Reports"}
    for path, title in pages.items():
        page = demo_page(site_server, path)
        open_tray(page)
        welcome = page.locator(".chat-welcome")
        expect(welcome).to_contain_text(f"I can see you are on the {title} page")
        starters = welcome.locator("[data-pagechat-starter]")
        assert 3 <= starters.count() <= 4, (path, starters.all_inner_texts())
        expect(starters.first).to_be_visible()
        assert not seen_names(page), (path, seen_names(page))
        if path == "/research-streams/":
            screenshot(page, "words_welcome_starters")
            first = starters.first.inner_text()
            starters.first.click()
            expect(page.locator(".chat-msg--user").first).to_contain_text(first)
            expect(final_messages(page)).to_have_count(1)
            wait_idle(page)
            expect(welcome).to_be_hidden()
            # the offline model answered the starter (stream ideas) and named nothing by its id
            expect(final_messages(page).first).to_contain_text(re.compile("stream ideas", re.I))
            assert not seen_names(page), seen_names(page)
        assert_clean(page)


def test_demo_approval_says_what_it_will_do_once_and_a_tool_turn_shows_no_internal_name(
        demo_page: Callable[..., Page], site_server: LiveServer) -> None:
    sid = _stream_id(site_server, "CRISPR Therapeutics Watch")
    page = demo_page(site_server, "/research-streams/")
    open_tray(page)
    send(page, f"Rename stream {sid} to Oncology Radar")
    card = page.get_by_role("group", name="Approval needed: Rename stream")
    expect(card.locator(".chat-approval__summary")).to_have_text("Rename “CRISPR Therapeutics Watch” to “Oncology Radar”?")
    expect(page.locator("#chat-tray-panel").get_by_text("Waiting for your approval", exact=True)).to_have_count(1)
    expect(card).not_to_contain_text("{")
    expect(page.locator(".chat-progress__tool")).to_have_text("Rename stream")
    screenshot(page, "words_approval_sentence")
    card.get_by_role("button", name="Deny").click()
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    expect(final_messages(page).last).to_contain_text("You did not approve “Rename stream”")
    expect(final_messages(page).last.locator(".chat-tool-card__name")).to_have_text("Rename stream")

    # someone else's stream: its name is never read, so the approval lists the fields (labelled, plain text)
    theirs = _stream_id(site_server, "Heart Failure Therapies", owner="alice")
    alice_name = "Heart Failure Therapies"
    send(page, f"Rename stream {theirs} to Cardio Radar")
    card = page.get_by_role("group", name="Approval needed: Rename stream")
    fields = card.locator(".chat-approval__fields")
    expect(fields.locator("dt")).to_have_text(["Stream", "New name"])
    expect(fields.locator("dd")).to_have_text([str(theirs), "Cardio Radar"])
    expect(card.locator(".chat-approval__summary")).to_have_count(0)
    expect(card).not_to_contain_text("{")
    expect(card).not_to_contain_text(alice_name)
    expect(page.locator("#chat-tray-panel").get_by_text("Waiting for your approval", exact=True)).to_have_count(1)
    screenshot(page, "words_approval_fields")
    card.get_by_role("button", name="Deny").click()
    expect(final_messages(page)).to_have_count(2)
    wait_idle(page)
    assert not seen_names(page), seen_names(page)
    assert_clean(page)

    # a tool turn with a progress card and a tool card: every text the tray showed on the way
    page = demo_page(site_server, "/reports/")
    open_tray(page)
    send(page, "search articles about CRISPR")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    reply = final_messages(page).last
    expect(reply).to_contain_text("Let me use “Search articles” for that.")
    expect(reply.locator(".chat-tool-card__name")).to_have_text("Search articles")
    # the progress card was seen (its tool's own progress words), and no text of the turn had a snake_case name
    assert any("Searching the corpus" in t or "ranking…" in t for t in page.evaluate("window.__trayTexts"))
    assert not seen_names(page), seen_names(page)
    assert_clean(page)


def test_demo_tool_card_lists_its_input_as_labelled_fields_and_json_only_for_staff(
        demo_page: Callable[..., Page], site_server: LiveServer) -> None:
    """A tool card's input, expanded, is a labelled list as an approval's (the page's labels for its tools: "Stream",
    "New name"; else the key in words: "Query"), never JSON; staff alone also see the input as sent, under Diagnostics."""
    for user in ("alice", "demo"):  # alice is no staff member; demo is
        page = demo_page(site_server, "/reports/", user=user)
        open_tray(page)
        send(page, "search articles about CRISPR")
        expect(final_messages(page)).to_have_count(1)
        wait_idle(page)
        card = final_messages(page).last.locator(".chat-tool-card")
        header = card.locator(".chat-tool-card__header")
        expect(header).to_have_accessible_name("Search articles")
        header.click()
        body = card.locator(".chat-tool-card__body")
        fields = body.locator("dl.chat-tool-card__fields")
        expect(fields.locator("dt")).to_have_text(["Query"])
        expect(fields.locator("dd")).to_have_text(["CRISPR"])
        expect(fields).not_to_contain_text("{")
        raw = body.locator("details.chat-tool-card__raw")
        if user == "alice":
            expect(raw).to_have_count(0)
            expect(body).not_to_contain_text('"query"')
            assert "{" not in body.inner_text(), body.inner_text()
            screenshot(page, "words_tool_card_fields")
        else:
            expect(raw.locator("pre")).to_be_hidden()  # collapsed until asked for
            raw.locator("summary").click()
            expect(raw.locator("summary")).to_have_text("Diagnostics")
            expect(raw.locator("pre")).to_contain_text('"query": "CRISPR"')
        assert not seen_names(page), seen_names(page)
        assert_clean(page)

    # the streams list's own tool: its schema's labels, as its approval lists them
    theirs = _stream_id(site_server, "Heart Failure Therapies", owner="alice")
    page = demo_page(site_server, "/research-streams/", user="alice")
    open_tray(page)
    send(page, f"Rename stream {theirs} to Cardio Radar")
    page.get_by_role("group", name="Approval needed: Rename stream").get_by_role("button", name="Deny").click()
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    card = final_messages(page).last.locator(".chat-tool-card")
    card.locator(".chat-tool-card__header").click()
    fields = card.locator("dl.chat-tool-card__fields")
    expect(fields.locator("dt")).to_have_text(["Stream", "New name"])
    expect(fields.locator("dd")).to_have_text([str(theirs), "Cardio Radar"])
    assert "{" not in card.inner_text()
    assert_clean(page)


# ---- the test suite's host page (the tray harness) ---------------------------------------------------------------


@pytest.fixture
def host() -> Iterator[FakeProtocolServer]:
    srv = FakeProtocolServer().start()
    yield srv
    srv.stop()


STARTERS = ["Where is my order?", "Change my delivery address", "Talk about a refund"]


def host_page(browser: Browser, server: FakeProtocolServer) -> Page:
    """The harness page as a host's page renders it, with a page title and starters in its tray config (what the
    `{% chat_tray %}` tag adds from the page's PageSpec; the harness builds its config by hand)."""
    server.extra_config = {"page_title": "Your orders", "starters": STARTERS}
    context = browser.new_context(viewport=WIDE)
    page = watched_page(context, TIMEOUT_MS)
    page.add_init_script(TRAY_TEXTS)
    page.goto(f"{server.http_url}/?page=order_history")
    expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
    return page


def test_host_page_starters_titles_and_approvals_a_person_can_judge(chromium: Browser, host: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        message = frame["message"]
        if message == STARTERS[1]:  # a tool that describes its call
            run.emit("tool_start", tool="update_address", title="Change the address", input={"order_id": 1042, "street": "Elm St 5"},
                     tool_use_id="toolu_a")
            run.emit("tool_approval", tool="update_address", title="Change the address", input={"order_id": 1042, "street": "Elm St 5"},
                     tool_use_id="toolu_a", summary="Deliver order 1042 to <b>Elm St 5</b> instead of Oak Rd 1?",
                     fields=[{"label": "Order", "value": "1042"}, {"label": "Street", "value": "Elm St 5"}])
            approved = await run.wait_approval("toolu_a")
            run.emit("tool_complete", tool="update_address", index=0)
            await run.stream_text("Done. [[tool:0]]" if approved else "Nothing changed. [[tool:0]]")
            run.complete(tool_history=[{"tool_name": "update_address", "title": "Change the address", "input": {}, "output": "ok"}])
        else:  # a tool without a sentence: its fields
            run.emit("tool_start", tool="issue_refund", title="Refund", input={"order_id": 1042, "amount": {"value": 12, "currency": "EUR"}},
                     tool_use_id="toolu_b")
            run.emit("tool_approval", tool="issue_refund", title="Refund", input={"order_id": 1042, "amount": {"value": 12, "currency": "EUR"}},
                     tool_use_id="toolu_b", fields=[{"label": "Order", "value": "1042"}, {"label": "Amount", "value": "Value: 12; Currency: EUR"}])
            await run.wait_approval("toolu_b")
            run.emit("tool_complete", tool="issue_refund", index=0)
            run.complete(message="Not refunded. [[tool:0]]", tool_history=[{"tool_name": "issue_refund", "title": "Refund", "input": {}, "output": "no"}])

    host.script = script
    page = host_page(chromium, host)
    open_tray(page)
    welcome = page.locator(".chat-welcome")
    expect(welcome).to_contain_text("I can see you are on the Your orders page")
    expect(welcome.locator("[data-pagechat-starter]")).to_have_text(STARTERS)
    welcome.locator('[data-pagechat-starter="1"]').click()
    (sent,) = host.wait_for_frame("chat.send")
    assert sent["message"] == STARTERS[1] and sent["interaction_type"] == "text_input"

    card = page.get_by_role("group", name="Approval needed: Change the address")
    summary = card.locator(".chat-approval__summary")
    expect(summary).to_have_text("Deliver order 1042 to <b>Elm St 5</b> instead of Oak Rd 1?")  # text, never HTML
    assert card.locator("b").count() == 0
    expect(card.locator(".chat-approval__fields")).to_have_count(0)
    expect(page.locator("#chat-tray-panel").get_by_text("Waiting for your approval", exact=True)).to_have_count(1)
    expect(page.locator(".chat-progress__tool")).to_have_text("Change the address")
    screenshot(page, "words_host_approval_sentence")
    card.get_by_role("button", name="Approve").click()
    expect(final_messages(page)).to_have_count(1)
    expect(final_messages(page).last.locator(".chat-tool-card__name")).to_have_text("Change the address")
    wait_idle(page)

    send(page, "refund it")
    card = page.get_by_role("group", name="Approval needed: Refund")
    expect(card.locator("dt")).to_have_text(["Order", "Amount"])
    expect(card.locator("dd")).to_have_text(["1042", "Value: 12; Currency: EUR"])
    expect(card).not_to_contain_text("{")
    expect(page.locator("#chat-tray-panel").get_by_text("Waiting for your approval", exact=True)).to_have_count(1)
    screenshot(page, "words_host_approval_fields")
    card.get_by_role("button", name="Deny").click()
    expect(final_messages(page)).to_have_count(2)
    wait_idle(page)
    assert not seen_names(page), seen_names(page)
    assert_clean(page)
    page.context.close()


def test_host_page_from_a_server_before_titles_still_works(chromium: Browser, host: FakeProtocolServer) -> None:
    """An older server sends no title, summary or fields: the tray shows the tool's name and its input as labelled
    fields it makes itself (never JSON)."""
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.emit("tool_approval", tool="legacy_tool", input={"a": 1}, tool_use_id="toolu_c")
        await run.wait_approval("toolu_c")
        await asyncio.sleep(0)
        run.complete(message="ok")

    host.script = script
    page = host_page(chromium, host)
    open_tray(page)
    send(page, "go")
    card = page.get_by_role("group", name="Approval needed: legacy_tool")
    expect(card.locator(".chat-approval__fields dt")).to_have_text(["A"])
    expect(card.locator(".chat-approval__fields dd")).to_have_text(["1"])
    expect(card).not_to_contain_text("{")
    expect(page.locator("#chat-tray-panel").get_by_text("Waiting for your approval", exact=True)).to_have_count(1)
    card.get_by_role("button", name="Deny").click()
    expect(final_messages(page)).to_have_count(1)
    assert_clean(page)
    page.context.close()
