"""The tray as a person uses it, in a real browser against the live demo: per-message actions (copy, regenerate,
edit, feedback), streaming markdown, scrolling, honest states, focus, the phone sheet, dark mode, and axe-core
(from the npm package, injected into each demo page) with zero serious or critical violations.
Screenshots of the main states: artifacts/screenshots/polish_*.png."""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import ROOT, LiveServer, screenshot, tray_page
from .markdown_provider import CODE, MARKDOWN_TEXT
from .test_live_site import (
    NARROW,
    WIDE,
    actions,
    ask,
    assert_clean,
    chips,
    conversation_id,
    final_messages,
    login,
    open_tray,
    panel,
    send,
    stream_id,
    wait_idle,
)

pytestmark = pytest.mark.e2e

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="module")
def markdown_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo site whose model answers with long rich markdown, streamed slowly."""
    return start_live_server("markdown", CHAT_PROVIDER="tests.e2e.markdown_provider.MarkdownProvider", CHAT_OFFLINE_DELAY="0.03")


@pytest.fixture(scope="module")
def short_answers_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo site with its offline model held to 12 tokens (words) per model call."""
    return start_live_server("short", CHAT_OFFLINE_DELAY="0.01", CHAT_MAX_TOKENS="12")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from .conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def open_page(chromium: Browser) -> Iterator[Callable[..., Page]]:
    """open_page(server, path, viewport, dark, bypass_csp, user) -> a logged-in page with the clipboard allowed."""
    contexts = []

    def make(server: LiveServer, path: str = "/", viewport: dict[str, int] = WIDE, dark: bool = False, bypass_csp: bool = False,
             user: str = "demo") -> Page:
        context = chromium.new_context(viewport=viewport, storage_state=login(chromium, server, user), bypass_csp=bypass_csp,
                                       color_scheme="dark" if dark else "light")
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        contexts.append(context)
        return tray_page(context, server.url + path)

    yield make
    for context in contexts:
        context.close()


def shot(page: Page, name: str) -> None:
    screenshot(page, f"polish_{name}")


def clipboard(page: Page) -> str:
    return str(page.evaluate("navigator.clipboard.readText()"))


def answer_actions(message: Any) -> Any:
    return message.get_by_role("group", name="Answer actions")


def row_action(page: Page, title: str, name: str) -> Any:
    """One of a listed conversation's actions (Rename, Pin, Download, Delete), from the row's menu."""
    page.get_by_role("button", name=f"Actions for conversation: {title}").click()
    return page.get_by_role("menuitem", name=name)


# ---- copy, markdown while streaming and final --------------------------------------------------------


def test_markdown_streams_safely_and_copy_puts_text_on_the_clipboard(open_page: Callable[..., Page], markdown_server: LiveServer) -> None:
    page = open_page(markdown_server, "/reports/")
    open_tray(page)
    send(page, "show me an overview")
    streaming = page.locator(".chat-bubble--streaming")
    # While it streams: a real table and code block already (no raw | or ```), and the cursor at the end.
    expect(streaming.locator("table")).to_be_visible()
    expect(streaming.locator("pre code")).to_contain_text("def greet")
    expect(streaming.locator(".chat-cursor")).to_have_count(1)
    # coloured while the answer still streams, once its closing fence has arrived
    expect(streaming.locator("pre code .hljs-keyword").first).to_have_text("def")
    expect(page.locator(".chat-bubble--streaming")).to_have_count(1)
    assert "|---|" not in streaming.inner_text()
    shot(page, "streaming_markdown")
    wait_idle(page)
    reply = final_messages(page).last
    expect(reply.locator("h2")).to_have_text("Streams at a glance")
    expect(reply.locator(".chat-cursor")).to_have_count(0)
    # Tables have borders.
    border = reply.locator("td").first.evaluate("el => getComputedStyle(el).borderTopWidth + ' ' + getComputedStyle(el).borderTopStyle")
    assert border == "1px solid", border
    # Copy on the answer: its markdown text.
    answer_actions(reply).get_by_role("button", name="Copy").click()
    expect(page.locator(".chat-notice")).to_have_text("Copied to clipboard.")
    assert clipboard(page) == MARKDOWN_TEXT
    # The final answer's code is coloured: the same text, in highlight.js's spans.
    code = reply.locator("pre code")
    expect(code).to_have_class(re.compile(r"\bhljs\b"))
    expect(code.locator(".hljs-keyword").first).to_have_text("def")
    expect(code.locator(".hljs-string")).to_contain_text("Hello")
    assert code.inner_text().rstrip("\n") == CODE
    keyword_colour = code.locator(".hljs-keyword").first.evaluate("el => getComputedStyle(el).color")
    assert keyword_colour != code.evaluate("el => getComputedStyle(el).color")
    # Copy on the code block: just the code.
    reply.locator(".chat-code-block").get_by_role("button", name="Copy").click()
    assert clipboard(page).rstrip("\n") == CODE
    assert_clean(page)


def test_scroll_does_not_jump_when_the_reader_scrolled_up(open_page: Callable[..., Page], markdown_server: LiveServer) -> None:
    page = open_page(markdown_server, "/reports/")
    open_tray(page)
    log = page.locator(".chat-log")
    send(page, "first")
    wait_idle(page)
    send(page, "second")
    expect(page.locator(".chat-bubble--streaming")).to_be_visible()
    # The reader scrolls up to read the first answer while the second streams.
    log.evaluate("el => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); }")
    jump = page.get_by_role("button", name="Jump to latest")
    expect(jump).to_be_visible()
    wait_idle(page)
    expect(final_messages(page)).to_have_count(2)
    page.wait_for_timeout(300)
    assert log.evaluate("el => el.scrollTop") < 5  # the finished answer did not pull the reader down
    shot(page, "jump_to_latest")
    jump.click()
    assert log.evaluate("el => el.scrollHeight - el.scrollTop - el.clientHeight") < 5
    expect(jump).to_be_hidden()
    assert_clean(page)


# ---- regenerate, edit, feedback ----------------------------------------------------------------------


def test_regenerate_makes_a_new_run_and_keeps_one_question(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    open_tray(page)
    ask(page, "hello there")
    cid = conversation_id(page)
    first_run = site_server.query("SELECT id FROM pagechat_run WHERE conversation_id = ?", cid)
    answer_actions(final_messages(page).last).get_by_role("button", name="Regenerate").click()
    wait_idle(page)
    expect(final_messages(page)).to_have_count(1)
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    site_server.wait_for_row("SELECT 1 FROM pagechat_run WHERE conversation_id = ? AND status = 'completed' GROUP BY conversation_id HAVING count(*) = 2", cid)
    runs = site_server.query("SELECT id FROM pagechat_run WHERE conversation_id = ?", cid)
    assert len(runs) == 2 and first_run[0] in runs
    rows = site_server.query("SELECT role, content FROM pagechat_message WHERE conversation_id = ? AND NOT replaced ORDER BY id", cid)
    assert [r[0] for r in rows] == ["user", "assistant"] and rows[0][1] == "hello there"
    # the first answer is kept as an earlier version: a pager ("2 / 2") pages back to it
    (kept,) = site_server.query("SELECT content FROM pagechat_message WHERE conversation_id = ? AND replaced", cid)
    pager = final_messages(page).last.get_by_role("group", name="Versions of this answer")
    expect(pager).to_contain_text("2 / 2")
    expect(pager.get_by_role("button", name="Next version")).to_be_disabled()
    pager.get_by_role("button", name="Previous version").click()
    expect(pager).to_contain_text("1 / 2")
    expect(final_messages(page).last.locator(".chat-bubble")).to_contain_text(kept[0].replace("**", "")[:60])  # rendered
    expect(final_messages(page).last.get_by_role("button", name="Good response")).to_be_hidden()  # the latest's own
    pager.get_by_role("button", name="Next version").click()
    expect(pager).to_contain_text("2 / 2")
    expect(final_messages(page).last.get_by_role("button", name="Good response")).to_be_visible()
    # After a reload: still one question and one answer, with its earlier version.
    page.reload()
    expect(final_messages(page)).to_have_count(1)
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_contain_text("2 / 2")
    assert_clean(page)


def test_edit_and_resend_the_last_question(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    open_tray(page)
    ask(page, "hello wrold")
    cid = conversation_id(page)
    page.locator(".chat-msg--user").last.get_by_role("button", name="Edit").click()
    box = page.get_by_label("Message")
    expect(box).to_be_focused()
    expect(box).to_have_value("hello wrold")
    expect(page.locator(".chat-editing")).to_be_visible()
    box.fill("hello world")
    box.press("Enter")
    wait_idle(page)
    expect(page.locator(".chat-bubble--user")).to_have_text(["hello world"])
    expect(final_messages(page)).to_have_count(1)
    site_server.wait_for_row("SELECT 1 FROM pagechat_message WHERE conversation_id = ? AND content = 'hello world'", cid)
    rows = site_server.query("SELECT role, content FROM pagechat_message WHERE conversation_id = ? AND role = 'user'", cid)
    assert rows == [("user", "hello world")]
    # Up in an empty composer takes the last question back for editing; in a composer with text it only moves the caret.
    box.fill("draft")
    box.press("ArrowUp")
    expect(box).to_have_value("draft")
    expect(page.locator(".chat-editing")).to_be_hidden()
    box.fill("")
    box.press("ArrowUp")
    expect(box).to_have_value("hello world")
    expect(page.locator(".chat-editing")).to_be_visible()
    assert_clean(page)


def test_an_answer_cut_at_the_token_limit_is_continued_to_its_end_on_the_real_server(
        open_page: Callable[..., Page], site_server: LiveServer, short_answers_server: LiveServer) -> None:
    """No fake: the server's own token limit cuts the offline model's answer, the tray says so, and Continue (sent
    as a message) makes the model go on where it stopped, until the answer is whole."""
    question = "what can you do"
    page = open_page(short_answers_server, "/reports/")
    open_tray(page)
    cut = ask(page, question)
    expect(cut.get_by_role("note")).to_contain_text("The answer stopped at its length limit.")
    shot(page, "15_cut_at_the_token_limit")
    for _ in range(15):
        latest = final_messages(page).last
        if not latest.get_by_role("note").count():
            break
        answers = final_messages(page).count()
        latest.get_by_role("button", name="Continue", exact=True).click()
        expect(final_messages(page)).to_have_count(answers + 1)
        wait_idle(page)
    expect(final_messages(page).last.get_by_role("note")).to_have_count(0)
    parts = short_answers_server.query(
        "SELECT content, stop_reason FROM pagechat_message WHERE conversation_id = ? AND role = 'assistant' ORDER BY id", conversation_id(page))
    assert len(parts) > 2 and [r for _, r in parts] == ["max_tokens"] * (len(parts) - 1) + [""]
    # the same question where nothing is cut: the parts together are that answer, nothing lost or said twice
    whole_page = open_page(site_server, "/reports/")
    open_tray(whole_page)
    ask(whole_page, question)
    (whole,) = site_server.query("SELECT content FROM pagechat_message WHERE conversation_id = ? AND role = 'assistant'", conversation_id(whole_page))
    assert " ".join(" ".join(c for c, _ in parts).split()) == " ".join(whole[0].split())
    assert_clean(page)


def test_feedback_is_stored_and_shown_pressed_after_a_reload(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    open_tray(page)
    reply = ask(page, "what can you do")
    bad = answer_actions(reply).get_by_role("button", name="Bad response")
    expect(bad).to_have_attribute("aria-pressed", "false")
    bad.click()
    expect(bad).to_have_attribute("aria-pressed", "true")
    comment = page.get_by_label("What went wrong? (optional)")
    expect(comment).to_be_focused()
    comment.fill("too vague")
    page.get_by_role("button", name="Send feedback").click()
    expect(page.locator(".chat-notice")).to_have_text("Thanks for your feedback.")
    cid = conversation_id(page)
    site_server.wait_for_row("SELECT 1 FROM pagechat_message WHERE conversation_id = ? AND feedback = 'bad' AND feedback_comment = 'too vague'", cid)
    page.reload()
    reply = final_messages(page).last
    expect(answer_actions(reply).get_by_role("button", name="Bad response")).to_have_attribute("aria-pressed", "true")
    expect(answer_actions(reply).get_by_role("button", name="Good response")).to_have_attribute("aria-pressed", "false")
    assert_clean(page)  # the admin's feedback filter: tests/chat/test_message_actions.py


def test_title_generated_after_the_first_turn_renamed_and_pinned_in_the_tray(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    open_tray(page)
    ask(page, "could you tell me about CRISPR gene editing?")
    cid = conversation_id(page)
    site_server.wait_for_row("SELECT 1 FROM pagechat_conversation WHERE id = ? AND title = 'CRISPR gene editing'", cid)
    page.get_by_role("button", name="History").click()
    row_action(page, "CRISPR gene editing", "Rename conversation: CRISPR gene editing").click()
    title = page.get_by_label("Conversation title")
    expect(title).to_be_focused()
    title.fill("Gene editing notes")
    title.press("Enter")
    expect(page.locator(f'.chat-conversation[data-conversation-id="{cid}"]')).to_contain_text("Gene editing notes")
    expect(page.get_by_role("button", name="Actions for conversation: Gene editing notes")).to_be_focused()  # its menu says the new title
    site_server.wait_for_row("SELECT 1 FROM pagechat_conversation WHERE id = ? AND title = 'Gene editing notes'", cid)
    # pinned to the top of the list, kept by the server: still there after a reload
    row_action(page, "Gene editing notes", "Pin conversation: Gene editing notes").click()
    pinned = page.get_by_role("list", name="Pinned").locator(".chat-conversation__title")
    expect(pinned).to_have_text(["Gene editing notes"])
    expect(page.locator(".chat-conversation-group__title").first).to_have_text("Pinned")
    site_server.wait_for_row("SELECT 1 FROM pagechat_conversation WHERE id = ? AND pinned_at IS NOT NULL", cid)
    page.reload()
    page.get_by_role("button", name="History").click()
    expect(pinned).to_have_text(["Gene editing notes"])
    row_action(page, "Gene editing notes", "Unpin conversation: Gene editing notes").click()
    expect(page.get_by_role("list", name="Pinned")).to_have_count(0)
    expect(page.get_by_role("list", name="Today").locator(".chat-conversation__title").first).to_have_text("Gene editing notes")
    site_server.wait_for_row("SELECT 1 FROM pagechat_conversation WHERE id = ? AND pinned_at IS NULL", cid)
    assert_clean(page)


def test_a_search_shows_where_the_words_were_said_marked_and_as_text(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    open_tray(page)
    ask(page, "notes on <img src=x onerror=window.__pwned=1> zebrafish regeneration, please")
    cid = conversation_id(page)
    page.get_by_role("button", name="History").click()
    page.get_by_role("searchbox", name="Search conversations").fill("ZEBRAFISH")
    found = page.locator(f'.chat-conversation[data-conversation-id="{cid}"]')
    expect(page.locator(".chat-conversation")).to_have_count(1)
    snippet = found.locator(".chat-conversation__snippet")
    expect(snippet).to_contain_text("<img src=x onerror=window.__pwned=1> zebrafish regeneration")  # the words, as text
    expect(snippet.locator("mark").first).to_have_text("zebrafish")  # what was searched for, in any case
    expect(snippet.locator("img")).to_have_count(0)
    assert page.evaluate("window.__pwned") is None
    shot(page, "16_search_snippet")
    assert_clean(page)


def test_download_all_conversations_gives_the_users_own_conversations(open_page: Callable[..., Page], site_server: LiveServer,
                                                                      tmp_path: Any) -> None:
    page = open_page(site_server, "/reports/", user="alice")
    open_tray(page)
    ask(page, "what can you do")
    cid = conversation_id(page)
    page.get_by_role("button", name="History").click()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download all conversations").click()
    assert download.value.suggested_filename == "conversations.json"
    path = tmp_path / "all.json"
    download.value.save_as(path)
    data = json.loads(path.read_text())
    assert data["username"] == "alice" and cid in [c["id"] for c in data["conversations"]]
    ids = [c["id"] for c in data["conversations"]]
    owners = {site_server.query("SELECT owner_id FROM pagechat_conversation WHERE id = ?", i)[0][0] for i in ids}
    assert len(owners) == 1  # alice's only, though the demo user chats on the same server
    assert_clean(page)


# ---- honest states --------------------------------------------------------------------------------------


def test_cancel_discards_the_proposal_not_the_conversation(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/")
    open_tray(page)
    ask(page, "Help me create a research stream")
    chips(page).get_by_text("Oncology", exact=True).click()
    expect(panel(page)).to_be_visible()
    wait_idle(page)
    count = final_messages(page).count()
    cancel = actions(page).get_by_role("button", name="Cancel")
    cancel.click()
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(panel(page)).to_be_hidden()
    expect(final_messages(page)).to_have_count(count)
    expect(final_messages(page).last.locator(".chat-payload-outcome")).to_have_text("rejected")
    for button in actions(page).get_by_role("button").all():
        expect(button).to_be_disabled()  # used: the decision is made
    expect(page.get_by_label("Message")).to_be_focused()
    cid = conversation_id(page)
    site_server.wait_for_row("SELECT 1 FROM pagechat_message WHERE conversation_id = ? AND payload_outcome = 'rejected'", cid)
    # The decision survives a reload: the tag is back and the actions stay disabled.
    page.reload()
    expect(final_messages(page).last.locator(".chat-payload-outcome")).to_have_text("rejected")
    expect(actions(page).get_by_role("button", name="Create stream")).to_be_disabled()
    assert_clean(page)


def test_a_server_action_refreshes_the_page_data(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/")
    streams = page.locator("#home-stats .stat").first.locator("dd")
    before = int(streams.inner_text())
    open_tray(page)
    ask(page, "Help me create a research stream")
    chips(page).get_by_text("Cardiology", exact=True).click()
    wait_idle(page)
    actions(page).get_by_role("button", name="Create stream").click()
    expect(final_messages(page).last).to_contain_text("Created")
    expect(streams).to_have_text(str(before + 1))  # without a reload
    assert_clean(page)


def test_length_counter_and_offline_banner(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    open_tray(page)
    limit = page.evaluate("JSON.parse(document.getElementById('chat-tray-config').textContent).max_message_chars")
    box = page.get_by_label("Message")
    box.fill("x" * (limit + 5))
    expect(page.locator(".chat-counter")).to_have_text(f"5 characters over the limit of {limit:,}")  # numbers in the page's locale
    expect(page.locator(".chat-send-btn")).to_be_disabled()
    expect(box).to_have_attribute("aria-invalid", "true")
    box.press("Enter")
    expect(page.locator(".chat-msg--user")).to_have_count(0)  # stopped before sending
    box.fill("short")
    expect(page.locator(".chat-send-btn")).to_be_enabled()
    page.context.set_offline(True)
    expect(page.locator(".chat-offline")).to_be_visible()
    box.press("Enter")
    expect(page.locator(".chat-notice")).to_have_text("You are offline: the message was not sent.")
    expect(box).to_have_value("short")  # nothing typed is lost
    shot(page, "offline_banner")
    page.context.set_offline(False)
    expect(page.locator(".chat-offline")).to_be_hidden()
    assert_clean_ignoring_network(page)


def assert_clean_ignoring_network(page: Page) -> None:
    assert page.evaluate("window.__csp") == []
    errors = [e for e in page.errors if "ERR_INTERNET_DISCONNECTED" not in e]  # type: ignore[attr-defined]
    assert errors == [], errors


# ---- layout and focus ----------------------------------------------------------------------------------


def test_focus_goes_to_the_input_and_back_to_the_launcher(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/reports/")
    launcher = page.locator(".chat-launcher")
    launcher.click()
    expect(page.get_by_label("Message")).to_be_focused()
    expect(launcher).to_be_hidden()  # it would cover the open tray
    page.keyboard.press("Escape")
    expect(page.locator(".chat-tray")).to_be_hidden()
    expect(launcher).to_be_visible()
    expect(page.get_by_role("button", name="Open chat")).to_be_focused()
    # The tray reopened by a navigation does not steal focus from the page.
    launcher.click()
    page.goto(site_server.url + "/research-streams/")
    expect(page.locator(".chat-tray")).to_be_visible()
    assert page.evaluate("document.activeElement === document.body || !document.activeElement.closest('#chat-tray')")
    assert_clean(page)


def test_accept_keeps_focus_sensible(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/research-streams/new/")
    open_tray(page)
    ask(page, "give me a stream template about immunotherapy")
    expect(panel(page)).to_be_visible()
    panel(page).get_by_role("button", name="Accept").click()
    expect(panel(page)).to_be_hidden()
    assert page.evaluate("document.activeElement !== document.body && document.activeElement.closest('#chat-tray') !== null")
    assert_clean(page)


def test_phone_layout_leaves_the_input_and_the_form_visible(open_page: Callable[..., Page], site_server: LiveServer) -> None:
    page = open_page(site_server, "/research-streams/new/", viewport=NARROW)
    open_tray(page)
    tray = page.locator(".chat-tray").bounding_box()
    assert tray is not None and tray["y"] > 0, tray  # a sheet from the bottom, not the whole screen
    ask(page, "give me a stream template about immunotherapy")
    panel(page).get_by_role("button", name="Accept").click()
    name = page.locator("#field-stream-name")
    expect(name).to_have_value("Immunotherapy Monitor")
    name.scroll_into_view_if_needed()
    box = page.get_by_label("Message")
    expect(box).to_be_visible()
    expect(page.get_by_role("button", name="Show conversation")).to_be_visible()
    sheet = page.locator(".chat-tray").bounding_box()
    field = name.bounding_box()
    assert sheet is not None and field is not None
    assert field["y"] + field["height"] <= sheet["y"], (field, sheet)  # the form is not behind the sheet
    shot(page, "phone_after_accept_light")
    page.get_by_role("button", name="Show conversation").click()
    expect(page.locator(".chat-log")).to_be_visible()
    assert_clean(page)


# ---- themes and screenshots ------------------------------------------------------------------------------


def _luminance(rgb: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", rgb)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["desktop", "phone"])
def test_themes_render_and_screenshots(open_page: Callable[..., Page], site_server: LiveServer, dark: bool, viewport: dict[str, int]) -> None:
    page = open_page(site_server, "/reports/", viewport=viewport, dark=dark)
    open_tray(page)
    ask(page, "search articles about CRISPR")
    tray_bg = page.locator(".chat-tray").evaluate("el => getComputedStyle(el).backgroundColor")
    body_bg = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")  # the site paints :root
    if dark:
        assert _luminance(tray_bg) < 60 and _luminance(body_bg) < 60, (tray_bg, body_bg)
    else:
        assert _luminance(tray_bg) > 200 and _luminance(body_bg) > 200, (tray_bg, body_bg)
    name = f"{'phone' if viewport is NARROW else 'desktop'}_{'dark' if dark else 'light'}"
    shot(page, f"{name}_results")
    if panel(page).is_visible():
        panel(page).get_by_role("button", name="Close panel").click()
    shot(page, f"{name}_tray")
    assert_clean(page)


# ---- accessibility: axe-core on every demo page, tray open and after a turn --------------------------------


def _axe_serious(page: Page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
      const r = await axe.run(document, {resultTypes: ['violations']});
      return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
    }""")
    return list(result)


def _demo_pages(server: LiveServer) -> list[str]:
    sid = stream_id(server, "Lung Cancer Immunotherapy Monitor")
    report = server.query("SELECT id FROM pagechat_demo_report ORDER BY id LIMIT 1")[0][0]
    article = server.query("SELECT external_id FROM pagechat_demo_article ORDER BY id LIMIT 1")[0][0]
    return ["/", "/research-streams/", "/research-streams/new/", f"/research-streams/{sid}/", f"/research-streams/{sid}/?tab=semantic",
            f"/research-streams/{sid}/?tab=retrieval", "/reports/", f"/reports/{report}/", f"/articles/{article}/"]


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_axe_no_serious_violations_on_every_demo_page(open_page: Callable[..., Page], site_server: LiveServer, dark: bool) -> None:
    assert AXE.exists(), "axe-core is installed by `make test` (npm ci)"
    found: dict[str, list[str]] = {}
    for path in _demo_pages(site_server):
        page = open_page(site_server, path, dark=dark, bypass_csp=True)  # axe is injected as a script
        open_tray(page)
        found[f"{path} (open)"] = _axe_serious(page)
        ask(page, "what is on this page?")
        found[f"{path} (after a turn)"] = _axe_serious(page)
        if path == "/":  # a tool card, opened; then the conversation list, its headings and its buttons, once, wide
            ask(page, "What is 17*23+4?")
            page.locator(".chat-tool-card__header").last.click()
            expect(page.locator(".chat-tool-card__body").last).to_be_visible()
            found[f"{path} (a tool card, open)"] = _axe_serious(page)
            page.get_by_role("button", name="Wide view").click()
            page.get_by_role("button", name="History").click()
            expect(page.locator(".chat-conversation-group__title").first).to_be_visible()
            found[f"{path} (conversation list, wide view)"] = _axe_serious(page)
            page.get_by_role("button", name="Your preferences").click()
            expect(page.get_by_label("What should the assistant know about you, or keep in mind in every answer?")).to_be_enabled()
            found[f"{path} (your preferences)"] = _axe_serious(page)
        page.close()
    bad = {k: v for k, v in found.items() if v}
    assert bad == {}, bad
