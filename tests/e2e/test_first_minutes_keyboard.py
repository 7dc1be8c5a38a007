"""Issue 37, item 8: the tray with the keyboard alone, in Chromium on the demo and on the test suite's harness host page
(the scripted protocol server of tests/e2e/tray/):

- focus never falls to <body> from inside the tray (Enter on a deciding action, a regenerated answer, a deleted
  conversation, a closed card);
- Tab stays with an open card: past its last control it goes to the tray's message box when the card leaves that in
  view (desktop), and round the card when it covers the tray (phone); never behind it into the site's header;
- Escape works from any element of the tray and closes the innermost open thing: a menu, then the card, then the tray;
- Ctrl+/ (documented in docs/tray.md, announced by the launcher's aria-keyshortcuts) opens the tray and focuses its
  message box from anywhere; the demo's "Skip to chat" link is the page's second Tab stop.
Screenshots: artifacts/screenshots/first_minutes_keyboard_*.png."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import ROOT, LiveServer, screenshot, watched_page
from .fake_protocol_server import FakeProtocolServer, FakeRun
from .test_live_site import TIMEOUT_MS, actions, assert_clean, chips, final_messages, login, panel, send, wait_idle

pytestmark = pytest.mark.e2e

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SHORTCUT = "Control+/"

# The elements of a container that Tab reaches, in order (as panel.js counts them).
TABBABLE = """(root) => [...root.querySelectorAll("a[href], button, input, select, textarea, summary, [tabindex]")]
  .filter((el) => el.tabIndex >= 0 && !el.disabled && el.getClientRects().length > 0)"""
# Where the focus is: "body", or the closest landmark-ish part of the page it is in.
WHERE = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return "body";
  if (el.closest(".chat-panel")) return "card";
  if (el.closest(".chat-menu")) return "menu";
  if (el.matches(".chat-composer .chat-input")) return "message box";
  if (el.closest("#chat-tray")) return "tray";
  if (el.closest(".site-header")) return "site header";
  return "page";
}"""


@pytest.fixture(scope="module")
def keyboard_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo on its own copy of the database: these tests create streams."""
    return start_live_server("first_minutes_keyboard", CHAT_OFFLINE_DELAY="0.01")


@pytest.fixture
def demo(chromium: Browser) -> Iterator[Callable[..., Page]]:
    """demo(server, path, viewport) -> a signed-in demo page, the tray not opened yet."""
    contexts = []

    def make(server: LiveServer, path: str = "/", viewport: dict[str, int] = DESKTOP) -> Page:
        context = chromium.new_context(viewport=viewport, storage_state=login(chromium, server))
        contexts.append(context)
        page = watched_page(context, TIMEOUT_MS)
        page.goto(server.url + path)
        expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def fake() -> Iterator[FakeProtocolServer]:
    srv = FakeProtocolServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def harness(chromium: Browser, fake: FakeProtocolServer) -> Iterator[Callable[..., Page]]:
    """harness(query, viewport) -> the harness host page with the tray open."""
    contexts = []

    def make(query: str = "", viewport: dict[str, int] = DESKTOP) -> Page:
        context = chromium.new_context(viewport=viewport)
        contexts.append(context)
        page = watched_page(context, TIMEOUT_MS)
        page.goto(f"{fake.http_url}/?{query}")
        expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
        page.locator(".chat-launcher").click()
        expect(page.locator(".chat-tray")).to_be_visible()
        return page

    yield make
    for context in contexts:
        context.close()


def shot(page: Page, name: str) -> None:
    screenshot(page, f"first_minutes_keyboard_{name}")


def where(page: Page) -> str:
    return str(page.evaluate(WHERE))


def message_box(page: Page) -> Any:
    return page.locator(".chat-composer .chat-input")


def tabbable(page: Page, selector: str) -> list[str]:
    """A description of each element Tab reaches in `selector` (its class and name), in order."""
    return list(page.locator(selector).evaluate(f"root => ({TABBABLE})(root).map((el) => el.className + ' ' + (el.getAttribute('aria-label') || el.textContent).trim())"))


def focus_nth(page: Page, selector: str, index: int) -> None:
    page.locator(selector).evaluate(f"(root, i) => ({TABBABLE})(root)[i].focus()", index)


# ---- focus never falls to <body> -------------------------------------------------------------------------------


def test_enter_on_accept_and_create_stream_keeps_the_focus_in_the_tray(demo: Callable[..., Page], keyboard_server: LiveServer) -> None:
    page = demo(keyboard_server, "/")
    page.keyboard.press(SHORTCUT)
    expect(message_box(page)).to_be_focused()
    page.keyboard.type("Help me create a research stream")
    page.keyboard.press("Enter")
    expect(chips(page).first).to_be_visible()
    wait_idle(page)
    chips(page).get_by_text("Oncology", exact=True).click()
    create = actions(page).last.get_by_role("button", name="Accept & Create stream")
    expect(create).to_be_enabled()
    wait_idle(page)
    create.focus()
    page.keyboard.press("Enter")
    expect(final_messages(page).last).to_contain_text("Created")
    wait_idle(page)
    assert where(page) == "message box"  # not <body>: the button it was on is disabled (the decision is made)
    page.keyboard.type("x")
    expect(message_box(page)).to_have_value("x")  # typing goes on where it was
    assert_clean(page)


def test_enter_on_cancel_on_the_new_stream_page_keeps_the_focus_in_the_tray(demo: Callable[..., Page], keyboard_server: LiveServer) -> None:
    page = demo(keyboard_server, "/research-streams/new/")
    page.keyboard.press(SHORTCUT)
    send(page, "Help me create a research stream")
    cancel = actions(page).last.get_by_role("button", name="Cancel")
    expect(cancel).to_be_enabled()
    wait_idle(page)
    cancel.focus()
    page.keyboard.press("Enter")
    expect(cancel).to_be_disabled()
    assert where(page) == "message box"
    assert_clean(page)


async def deciding_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    if frame["interaction_type"] == "action_executed":
        await run.stream_text("Saved.")
        run.complete(message_html="<p>Saved.</p>")
        return
    await run.stream_text("Here it is.")
    run.complete(
        message_html="<p>Here it is.</p>",
        suggested_values=[{"label": "Tell me more", "value": "more"}],
        suggested_actions=[{"label": "Save search", "action": "save_search", "handler": "server", "data": {"q": "x"}, "token": "t"}],
    )


def test_focus_stays_in_the_tray_when_what_had_it_goes(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    """A deciding button disabled, an answer replaced by Regenerate, a conversation deleted: the focus moves to the
    message box (or the next conversation in the list), never to <body>."""
    fake.script = deciding_turn
    page = harness()
    send(page, "first question")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    page.get_by_role("button", name="Save search").focus()
    page.keyboard.press("Enter")
    expect(final_messages(page)).to_have_count(2)
    wait_idle(page)
    assert where(page) == "message box"
    regenerate = final_messages(page).last.get_by_role("group", name="Answer actions").get_by_role("button", name="Regenerate")
    regenerate.focus()
    page.keyboard.press("Enter")
    expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_be_visible()
    wait_idle(page)
    assert where(page) == "message box"  # the answer it was on was replaced
    # a conversation deleted from its menu: the focus goes to the next one
    fake.add_conversation("Older chat", [{"role": "user", "content": "old"}])
    fake.add_conversation("Newer chat", [{"role": "user", "content": "new"}])
    page.get_by_role("button", name="History").click()
    trigger = page.get_by_role("button", name="Actions for conversation: Newer chat")
    trigger.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("menuitem", name="Rename conversation: Newer chat")).to_be_focused()
    page.keyboard.press("End")
    delete = page.get_by_role("menuitem", name="Delete conversation: Newer chat")
    expect(delete).to_be_focused()
    page.keyboard.press("Enter")
    expect(delete).to_have_text("Confirm delete")
    page.keyboard.press("Enter")
    expect(page.locator(".chat-conversation", has_text="Newer chat")).to_have_count(0)
    expect(page.locator(".chat-conversation", has_text="Older chat")).to_be_focused()
    assert_clean(page)


# ---- Tab and an open card --------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_tab_never_leaves_an_open_card_for_the_page_behind_it(demo: Callable[..., Page], keyboard_server: LiveServer,
                                                              viewport: dict[str, int]) -> None:
    page = demo(keyboard_server, "/", viewport)
    page.keyboard.press(SHORTCUT)
    send(page, "Help me create a research stream")
    wait_idle(page)
    chips(page).get_by_text("Cardiology", exact=True).click()
    wait_idle(page)
    if panel(page).is_visible():
        panel(page).get_by_role("button", name="Close panel").click()
    view = final_messages(page).last.locator(".chat-view-payload")
    view.focus()
    page.keyboard.press("Enter")  # the person opens the card: it takes the focus
    expect(panel(page)).to_be_visible()
    controls = tabbable(page, ".chat-panel")
    assert controls, "the card has its close button at least"
    seen = []
    for _ in range(len(controls) + 3):
        page.keyboard.press("Tab")
        seen.append(where(page))
    for _ in range(len(controls) + 3):
        page.keyboard.press("Shift+Tab")
        seen.append(where(page))
    shot(page, "card_tab_" + ("phone" if viewport is PHONE else "desktop"))
    # desktop: the card sits beside the tray, so past it the focus goes to the message box (and on through the tray);
    # on a phone it covers the tray, and the focus goes round the card
    allowed = {"card", "message box", "tray"} if viewport is DESKTOP else {"card"}
    assert set(seen) <= allowed, seen
    if viewport is DESKTOP:
        assert "message box" in seen, seen
    assert_clean(page)


# ---- Escape from anywhere ----------------------------------------------------------------------------------------


async def rich_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    await run.stream_text("Here is what I found [[tool:0]] and a proposal.")
    run.complete(
        message_html='<p>Here is what I found</p><div class="tool-slot" data-tool-index="0"></div><p>and a <a href="/x">proposal</a>.</p>',
        tool_history=[{"tool_name": "search_articles", "title": "Search articles", "input": {"q": "x"}, "output": "2 hits"}],
        suggested_values=[{"label": "Tell me more", "value": "more"}],
        suggested_actions=[{"label": "Highlight", "action": "highlight", "handler": "client", "data": {"selector": "#target"}}],
        custom_payload={"payload_id": "p-1", "type": "schema_proposal", "summary": "Rename the stream",
                        "data": {"proposed_changes": {"stream_name": "Oncology Radar"}}},
        diagnostics={"model": "m", "usage": {"output_tokens": 1}},
    )


def test_escape_closes_the_innermost_open_thing_from_any_element_of_the_tray(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    fake.script = rich_turn
    fake.add_conversation("Older chat", [{"role": "user", "content": "old"}])
    page = harness("staff=1&offline=1&page_script=before")
    send(page, "show me")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    card = page.get_by_role("dialog", name="Schema Proposal")
    # the card: Escape from each of its elements closes it (the tray stays), and the focus is not left on <body>
    page.get_by_role("button", name="View schema proposal").click()
    for i in range(len(tabbable(page, ".chat-panel"))):
        focus_nth(page, ".chat-panel", i)
        page.keyboard.press("Escape")
        expect(card).to_be_hidden()
        expect(page.locator(".chat-tray")).to_be_visible()
        assert where(page) != "body"
        page.get_by_role("button", name="View schema proposal").click()
    page.get_by_role("button", name="Close panel").click()
    # the tray: Escape from each of its elements closes it, the launcher takes the focus; Ctrl+/ brings it back
    elements = tabbable(page, ".chat-tray")
    assert len(elements) > 8, elements
    for i, name in enumerate(elements):
        focus_nth(page, ".chat-tray", i)
        page.keyboard.press("Escape")
        expect(page.locator(".chat-tray"), name).to_be_hidden()
        expect(page.locator(".chat-launcher")).to_be_focused()
        page.keyboard.press(SHORTCUT)
        expect(message_box(page)).to_be_focused()
    # the conversation list's row menu is innermost: Escape closes it (the focus back on its button), then the tray
    page.get_by_role("button", name="History").click()
    trigger = page.get_by_role("button", name="Actions for conversation: Older chat")
    trigger.focus()
    page.keyboard.press("ArrowDown")
    menu = page.get_by_role("menu", name="Actions for conversation: Older chat")
    expect(menu).to_be_visible()
    for item in range(menu.get_by_role("menuitem").count()):
        menu.get_by_role("menuitem").nth(item).focus()
        page.keyboard.press("Escape")
        expect(menu).to_be_hidden()
        expect(trigger).to_be_focused()
        expect(page.locator(".chat-tray")).to_be_visible()
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    expect(page.locator(".chat-tray")).to_be_hidden()
    assert_clean(page)


# ---- the shortcut and the skip link --------------------------------------------------------------------------------


def test_ctrl_slash_opens_and_focuses_the_tray_and_is_documented(harness: Callable[..., Page]) -> None:
    page = harness()
    page.keyboard.press("Escape")
    expect(page.locator(".chat-tray")).to_be_hidden()
    launcher = page.locator(".chat-launcher")
    expect(launcher).to_have_attribute("aria-keyshortcuts", SHORTCUT)
    expect(launcher).to_have_attribute("title", "Keyboard shortcut: Ctrl+/")
    assert "Ctrl+/" in (ROOT / "docs" / "tray.md").read_text()
    page.locator("#stream-name").focus()  # a field of the host page
    page.keyboard.press(SHORTCUT)
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(message_box(page)).to_be_focused()
    page.locator("#stream-name").focus()
    page.keyboard.press(SHORTCUT)  # open already: back to its message box
    expect(message_box(page)).to_be_focused()
    expect(page.locator("#stream-name")).to_have_value("old name")  # nothing typed into the page
    assert_clean(page)


def test_the_demos_skip_link_reaches_the_tray_in_two_tabs(demo: Callable[..., Page], keyboard_server: LiveServer) -> None:
    page = demo(keyboard_server, "/reports/")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to chat")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(message_box(page)).to_be_focused()
    assert page.url.endswith("/reports/")  # the link opened the tray, not a jump to #chat-tray
    page.keyboard.press("Escape")
    expect(page.locator(".chat-launcher")).to_be_focused()
    assert_clean(page)
