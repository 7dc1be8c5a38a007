"""Issue 37, item 11: calm by default, in Chromium on the demo and on the test suite's harness host page:

- a message's actions show on hover or focus, and always on a touch screen; Diagnostics is staff's only;
- a conversation's Rename/Pin/Download/Delete sit in a menu (a menu button, menu items, keyboard-operable);
- no dangling "Try one of these:": the lead-in belongs to the chips and leaves with them;
- on a phone (390x844) every button and link of the tray is at least 40 px each way;
- the tray's header is one row from 360 px wide;
- axe-core finds no serious or critical violation in these states.
Screenshots: artifacts/screenshots/first_minutes_calm_*.png."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import ROOT, LiveServer, screenshot, watched_page
from .fake_protocol_server import FakeProtocolServer, FakeRun
from .test_live_site import TIMEOUT_MS, ask, assert_clean, chips, final_messages, login, panel, send, wait_idle

pytestmark = pytest.mark.e2e

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SMALL_PHONE = {"width": 360, "height": 740}
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"

# Every control of the tray that is shown, with its size; links inside an answer's or a card's text are words in a
# sentence (WCAG 2.5.8 exempts such inline targets).
CONTROLS = """(root) => [...root.querySelectorAll("button, a[href], summary, select, textarea, input:not([type=file])")]
  .filter((el) => el.getClientRects().length > 0 && !el.matches(".chat-md a, .chat-payload a"))
  .map((el) => { const r = el.getBoundingClientRect();
    return {what: el.className + " " + (el.getAttribute("aria-label") || el.textContent).trim().slice(0, 40), w: r.width, h: r.height}; })"""


@pytest.fixture(scope="module")
def calm_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo on its own copy of the database."""
    return start_live_server("first_minutes_calm", CHAT_OFFLINE_DELAY="0.01")


@pytest.fixture
def demo(chromium: Browser) -> Iterator[Callable[..., Page]]:
    """demo(server, path, viewport, touch) -> a signed-in demo page with the tray open."""
    contexts = []

    def make(server: LiveServer, path: str = "/", viewport: dict[str, int] = DESKTOP, bypass_csp: bool = False) -> Page:
        context = chromium.new_context(viewport=viewport, storage_state=login(chromium, server), bypass_csp=bypass_csp)
        contexts.append(context)
        page = watched_page(context, TIMEOUT_MS)
        page.goto(server.url + path)
        page.locator(".chat-launcher").click()
        expect(page.locator(".chat-tray")).to_be_visible()
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
    """harness(query, viewport, touch, bypass_csp) -> the harness host page with the tray open."""
    contexts = []

    def make(query: str = "", viewport: dict[str, int] = DESKTOP, touch: bool = False, bypass_csp: bool = False) -> Page:
        context = chromium.new_context(viewport=viewport, has_touch=touch, is_mobile=touch, bypass_csp=bypass_csp)
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
    screenshot(page, f"first_minutes_calm_{name}")


def opacity(locator: Any) -> float:
    return float(locator.evaluate("el => getComputedStyle(el).opacity"))


def axe_serious(page: Page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    return list(page.evaluate("""async () => {
      const r = await axe.run(document, {resultTypes: ['violations']});
      return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
    }"""))


def small_controls(page: Page) -> list[dict[str, Any]]:
    """The tray's controls (its card included) less than 40 px wide or high."""
    found = page.locator("#chat-tray").evaluate(CONTROLS)
    assert found, "no controls found"
    return [c for c in found if c["w"] < 39.5 or c["h"] < 39.5]


def one_row(page: Page) -> None:
    """The tray's header: its heading and every button shown on one row, the header no taller than one."""
    parts = page.locator(".chat-tray__header").evaluate("""h => [h.querySelector('.chat-tray__heading'),
        ...h.querySelectorAll('.chat-tray__header-actions > *')].filter((el) => el.getClientRects().length)
        .map((el) => { const r = el.getBoundingClientRect(); return {what: el.className, top: r.top, bottom: r.bottom, right: r.right}; })""")
    header = page.locator(".chat-tray__header").bounding_box()
    assert header is not None
    middle = (parts[0]["top"] + parts[0]["bottom"]) / 2
    for part in parts:
        assert part["top"] < middle < part["bottom"], parts
        assert part["right"] <= header["x"] + header["width"] + 0.5, (part, header)  # nothing pushed out of the tray
    assert header["height"] < 64, header


async def chips_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    await run.stream_text(f"Answer to {frame['message']}.")
    run.complete(message_html=f"<p>Answer to {frame['message']}.</p>", suggested_values=[{"label": "Tell me more", "value": "more"}],
                 diagnostics={"model": "m", "usage": {"output_tokens": 1}})


# ---- message actions ---------------------------------------------------------------------------------------------


def test_message_actions_show_on_hover_or_focus_and_always_on_touch(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    fake.script = chips_turn
    page = harness("staff=1")
    send(page, "first")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    answer = final_messages(page).last
    bar = answer.get_by_role("group", name="Answer actions")
    copy = bar.get_by_role("button", name="Copy")
    diagnostics = bar.get_by_role("button", name="Diagnostics")  # an icon among the actions, not a link under every answer
    expect(diagnostics).to_have_count(1)
    assert "Diagnostics" not in answer.inner_text()
    page.mouse.move(5, 5)  # the pointer away, the focus in the message box
    expect(page.locator(".chat-composer .chat-input")).to_be_focused()
    page.wait_for_timeout(300)  # past the fade
    assert opacity(copy) == 0 and opacity(diagnostics) == 0
    shot(page, "actions_at_rest")
    answer.hover()
    page.wait_for_timeout(300)
    assert opacity(copy) == 1 and opacity(diagnostics) == 1
    page.mouse.move(5, 5)
    copy.focus()  # the keyboard reaches them: they show while the focus is in the message
    page.wait_for_timeout(300)
    assert opacity(copy) == 1
    page.locator(".chat-composer .chat-input").focus()
    page.wait_for_timeout(300)
    assert opacity(copy) == 0
    # a verdict given stays shown: it says what the person said
    answer.hover()
    bar.get_by_role("button", name="Good response").click()
    page.get_by_role("button", name="Skip").click()
    page.mouse.move(5, 5)
    page.locator(".chat-composer .chat-input").focus()
    page.wait_for_timeout(300)
    assert opacity(bar.get_by_role("button", name="Good response")) == 1 and opacity(copy) == 0
    assert_clean(page)


def test_on_a_touch_screen_the_actions_always_show_and_plain_users_get_no_diagnostics(harness: Callable[..., Page],
                                                                                   fake: FakeProtocolServer) -> None:
    fake.script = chips_turn
    page = harness(viewport=PHONE, touch=True)
    assert page.evaluate("matchMedia('(hover: none)').matches")
    send(page, "first")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    bar = final_messages(page).last.get_by_role("group", name="Answer actions")
    expect(bar.get_by_role("button", name="Diagnostics")).to_have_count(0)  # not staff
    for name in ("Copy", "Regenerate", "Good response", "Bad response"):
        assert opacity(bar.get_by_role("button", name=name)) == 1, name
    assert opacity(page.locator(".chat-msg--user .chat-msg-action").first) == 1
    assert_clean(page)


# ---- the conversation list's menus -------------------------------------------------------------------------------


def test_a_conversations_actions_sit_in_a_menu(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    first = fake.add_conversation("Older chat", [{"role": "user", "content": "old"}])
    fake.add_conversation("Newer chat", [{"role": "user", "content": "new"}])
    page = harness()
    page.get_by_role("button", name="History").click()
    rows = page.locator(".chat-conversation-row")
    expect(rows).to_have_count(2)
    # each row: the conversation, and one button; no Rename / Pin / Download / Delete links on show
    for i in range(2):
        shown = rows.nth(i).evaluate("r => [...r.querySelectorAll('button, a')].filter((e) => e.getClientRects().length).length")
        assert shown == 2, rows.nth(i).inner_html()
    expect(page.get_by_role("menuitem")).to_have_count(0)  # none shown until a menu opens
    trigger = page.get_by_role("button", name="Actions for conversation: Older chat")
    expect(trigger).to_have_attribute("aria-haspopup", "menu")
    expect(trigger).to_have_attribute("aria-expanded", "false")
    # keyboard: Enter opens on the first item; arrows, Home and End move (round at the ends); Escape gives focus back
    trigger.focus()
    page.keyboard.press("Enter")
    menu = page.get_by_role("menu", name="Actions for conversation: Older chat")
    expect(menu).to_be_visible()
    expect(trigger).to_have_attribute("aria-expanded", "true")
    items = menu.get_by_role("menuitem")
    expect(items).to_have_text(["Rename", "Pin", "Download", "Delete"])
    names = [items.nth(i).get_attribute("aria-label") for i in range(4)]
    assert names == ["Rename conversation: Older chat", "Pin conversation: Older chat", "Download conversation: Older chat",
                     "Delete conversation: Older chat"]
    expect(items.nth(0)).to_be_focused()
    shot(page, "conversation_menu")
    for key, at in [("ArrowDown", 1), ("ArrowDown", 2), ("End", 3), ("ArrowDown", 0), ("ArrowUp", 3), ("Home", 0)]:
        page.keyboard.press(key)
        expect(items.nth(at)).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(trigger).to_be_focused()
    expect(trigger).to_have_attribute("aria-expanded", "false")
    expect(page.locator(".chat-conversations")).to_be_visible()  # Escape closed the menu only
    page.keyboard.press("ArrowUp")  # opens on the last item
    expect(items.nth(3)).to_be_focused()
    page.keyboard.press("Tab")  # Tab leaves and closes it
    expect(menu).to_be_hidden()
    # Pin from the menu with the keyboard: the list is ordered again, the focus on that row's menu button
    trigger.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.get_by_role("list", name="Pinned").locator(".chat-conversation__title")).to_have_text("Older chat")
    expect(page.get_by_role("button", name="Actions for conversation: Older chat")).to_be_focused()
    assert "pinned_at" in fake.conversations[first]
    # the mouse: a click elsewhere closes an open menu
    page.get_by_role("button", name="Actions for conversation: Newer chat").click()
    expect(page.get_by_role("menu", name="Actions for conversation: Newer chat")).to_be_visible()
    page.locator(".chat-conversations__title").click()
    expect(page.get_by_role("menu")).to_have_count(0)
    assert_clean(page)


# ---- no dangling lead-in -----------------------------------------------------------------------------------------


def test_the_chips_lead_in_leaves_with_them(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    fake.script = chips_turn
    page = harness()
    send(page, "first")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    first = final_messages(page).first
    expect(first.locator(".chat-chips__caption")).to_have_text("Try one of these:")
    send(page, "second")
    expect(final_messages(page)).to_have_count(2)
    wait_idle(page)
    expect(first.get_by_role("group", name="Suggested replies")).to_have_count(0)
    assert "Try one of these" not in first.inner_text()  # gone with its chips
    expect(final_messages(page).last).to_contain_text("Try one of these:")
    assert_clean(page)


def test_the_offline_models_older_answers_end_without_a_lead_in(demo: Callable[..., Page], calm_server: LiveServer) -> None:
    page = demo(calm_server, "/reports/")
    first = ask(page, "hello")
    expect(first.get_by_role("group", name="Suggested replies")).to_be_visible()
    expect(first).to_contain_text("Try one of these:")  # over its chips
    assert "Try one of these" not in first.locator(".chat-bubble").inner_text()  # the answer's text does not say it
    ask(page, "thanks")
    assert "Try one of these" not in final_messages(page).first.inner_text()
    assert_clean(page)


# ---- phone: touch targets and the header -------------------------------------------------------------------------


def test_every_control_of_the_tray_is_40px_on_a_phone(demo: Callable[..., Page], calm_server: LiveServer) -> None:
    page = demo(calm_server, "/", PHONE)
    found: dict[str, list[dict[str, Any]]] = {"welcome": small_controls(page)}
    ask(page, "What is 17*23+4?")
    page.locator(".chat-tool-card__header").last.click()
    found["a tool card, open"] = small_controls(page)
    send(page, "Help me create a research stream")
    expect(chips(page).first).to_be_visible()
    wait_idle(page)
    found["chips and actions"] = small_controls(page)
    chips(page).get_by_text("Cardiology", exact=True).click()
    wait_idle(page)
    if not panel(page).is_visible():
        final_messages(page).last.locator(".chat-view-payload").click()
    expect(panel(page)).to_be_visible()
    found["the card"] = small_controls(page)
    shot(page, "phone_card")
    panel(page).get_by_role("button", name="Close panel").click()
    final_messages(page).last.get_by_role("button", name="Bad response").click()
    found["the feedback form"] = small_controls(page)
    page.get_by_role("button", name="Skip").click()
    page.locator(".chat-msg--user").last.get_by_role("button", name="Copy").click()
    assert {state: controls for state, controls in found.items() if controls} == {}
    page.get_by_role("button", name="History").click()
    expect(page.locator(".chat-conversation").first).to_be_visible()
    found["the conversation list"] = small_controls(page)
    page.locator(".chat-conversation__menu-btn").first.click()
    expect(page.get_by_role("menu").first).to_be_visible()
    found["a conversation's menu"] = small_controls(page)
    shot(page, "phone_menu")
    bad = {state: controls for state, controls in found.items() if controls}
    assert bad == {}, bad
    assert_clean(page)


@pytest.mark.parametrize("viewport", [SMALL_PHONE, PHONE, DESKTOP], ids=["360", "390", "1280"])
def test_the_trays_header_is_one_row(harness: Callable[..., Page], fake: FakeProtocolServer, viewport: dict[str, int]) -> None:
    fake.script = proposal_turn
    page = harness("offline=1&staff=1&page_script=before", viewport)
    one_row(page)
    for name in ("History", "New chat", "Close chat"):
        expect(page.locator(".chat-tray__header").get_by_role("button", name=name)).to_be_visible()  # named by their words
    if viewport is DESKTOP:
        return
    # after Accept on a phone the sheet steps aside, and "Show conversation" joins the header: still one row
    send(page, "propose")
    page.get_by_role("dialog", name="Schema Proposal").get_by_role("button", name="Accept").click()
    expect(page.get_by_role("button", name="Show conversation")).to_be_visible()
    one_row(page)
    shot(page, f"header_{viewport['width']}")
    assert_clean(page)


async def proposal_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    await run.stream_text("Here is a proposal.")
    run.complete(message_html="<p>Here is a proposal.</p>", custom_payload={
        "payload_id": "p-1", "type": "schema_proposal", "summary": "Rename the stream", "data": {"proposed_changes": {"stream_name": "Radar"}}})


# ---- axe-core in these states ------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_axe_finds_nothing_serious_with_a_menu_open_and_the_actions_at_rest(harness: Callable[..., Page], fake: FakeProtocolServer,
                                                                           viewport: dict[str, int]) -> None:
    assert AXE.exists(), "axe-core is installed by `make test` (npm ci)"
    fake.script = chips_turn
    fake.add_conversation("Older chat", [{"role": "user", "content": "old"}])
    page = harness("staff=1&offline=1", viewport, bypass_csp=True)  # axe is injected as a script
    send(page, "first")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    found = {"an answer, its actions at rest": axe_serious(page)}
    page.get_by_role("button", name="History").click()
    page.get_by_role("button", name="Actions for conversation: Older chat").click()
    expect(page.get_by_role("menu")).to_be_visible()
    found["a conversation's menu, open"] = axe_serious(page)
    assert {k: v for k, v in found.items() if v} == {}
    assert_clean(page)
