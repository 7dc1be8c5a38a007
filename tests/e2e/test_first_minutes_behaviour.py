"""The first five minutes, behaviour (issue 37, items 1, 6, 7 and 10), in Chromium on the demo and on the test suite's
harness host page (the scripted protocol server of tests/e2e/tray/):

1. focus stays where the person put it: a card that opens by itself takes neither the focus nor a typed character; on a
   phone (390x844) a proposal is readable and its accept/reject is on the card;
6. the page learns what changed (`pagechat:changed`) and the demo's pages show it without a reload;
7. Cancel/Escape give the message box back what it held; only typed questions are editable; editing the first
   question renames the conversation;
10. one accept path: deciding the card disables the chat's buttons that would decide it again, and a card its page
    cannot apply gets the answer's own server action as its primary button.
Screenshots: artifacts/screenshots/first_minutes_*.png."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import LiveServer, screenshot, watched_page
from .fake_protocol_server import FakeProtocolServer, FakeRun
from .test_live_site import (
    TIMEOUT_MS,
    WIDE,
    WsProxy,
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

PHONE = {"width": 390, "height": 844}
SENTENCE = "and also add a regulatory channel"
# Every pagechat:changed the page hears, and a mark that survives only while the page is not reloaded.
CHANGES_RECORDER = """
window.__changes = [];
window.__notReloaded = true;
document.addEventListener("pagechat:changed", (e) => window.__changes.push(e.detail));
"""


@pytest.fixture(scope="module")
def behaviour_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo on its own copy of the database: these tests rename and create streams."""
    return start_live_server("first_minutes", CHAT_OFFLINE_DELAY="0.01")


@pytest.fixture
def open_page(chromium: Browser) -> Iterator[Callable[..., Page]]:
    """open_page(server, path, viewport, user, before) -> a signed-in demo page that records pagechat:changed;
    `before(page)` runs before it loads (a websocket proxy must be in place before the tray connects)."""
    contexts = []

    def make(server: LiveServer, path: str = "/", viewport: dict[str, int] = WIDE, user: str = "demo",
             before: Callable[[Page], Any] | None = None) -> Page:
        context = chromium.new_context(viewport=viewport, storage_state=login(chromium, server, user))
        contexts.append(context)
        page = watched_page(context, TIMEOUT_MS)
        page.add_init_script(CHANGES_RECORDER)
        if before is not None:
            before(page)
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
    """harness(query, viewport) -> the harness host page (the real tray template, its page and host scripts)."""
    contexts = []

    def make(query: str = "", viewport: dict[str, int] = WIDE) -> Page:
        context = chromium.new_context(viewport=viewport)
        contexts.append(context)
        page = watched_page(context, TIMEOUT_MS)  # it records CSP violations too (CSP_LISTENER)
        page.add_init_script(CHANGES_RECORDER)
        page.goto(f"{fake.http_url}/?{query}")
        expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
        page.get_by_role("button", name="Open chat").click()
        expect(page.locator(".chat-tray")).to_be_visible()
        return page

    yield make
    for context in contexts:
        context.close()


def shot(page: Page, name: str) -> None:
    screenshot(page, f"first_minutes_{name}")


def box(page: Page) -> Any:
    return page.get_by_label("Message")


def until(page: Page, js: str, timeout: float = TIMEOUT_MS / 1000) -> None:
    """Wait until the expression `js` is true in the page (polled from here: the page's CSP forbids eval)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(js):
        assert time.monotonic() < deadline, f"still false after {timeout}s: {js}"
        time.sleep(0.05)


def focused_in_box(page: Page) -> bool:
    return bool(page.evaluate("document.activeElement === document.querySelector('.chat-input')"))


PROPOSAL = {"proposed_changes": {"stream_name": "Oncology Radar", "purpose": "Track"}, "confidence": "high"}


def proposal_script(gate: str | None = None, actions: list[dict[str, Any]] | None = None, payload_type: str = "schema_proposal") -> Any:
    """A turn that streams a line, waits for `gate` (if any), then completes with a proposal card and `actions`."""
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("Here is a proposal for the stream.")
        if gate:
            await run.gate(gate)
        run.complete(
            message_html="<p>Here is a proposal for the stream.</p>",
            custom_payload={"payload_id": f"p-{run.run_id[:8]}", "type": payload_type, "summary": "Rename the stream", "data": PROPOSAL},
            suggested_actions=actions or [],
        )
    return script


# ---- 1: focus stays where the person put it ------------------------------------------------------------------


def test_harness_a_card_opening_by_itself_takes_no_focus_and_no_keys(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    fake.script = proposal_script(gate="complete")
    page = harness()
    send(page, "propose a new name")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("Here is a proposal")
    box(page).click()
    page.keyboard.type(SENTENCE[:9], delay=20)
    fake.open_gate("complete")  # the answer ends while the person types: its card opens by itself
    card = page.get_by_role("dialog", name="Schema Proposal")
    expect(card).to_be_visible()
    assert focused_in_box(page)  # the card did not take the focus...
    page.keyboard.type(SENTENCE[9:], delay=20)
    expect(box(page)).to_have_value(SENTENCE)  # ...nor a single character
    shot(page, "harness_card_opened_while_typing")
    # Escape closes the card; the focus stays in the message box with the sentence
    page.keyboard.press("Escape")
    expect(card).to_be_hidden()
    assert focused_in_box(page)
    # opened by the person (its View button), the card takes the focus, and gives it back when closed
    view = page.get_by_role("button", name="View schema proposal")
    view.click()
    expect(card.locator(".chat-panel__title")).to_be_focused()
    page.keyboard.press("Escape")
    expect(view).to_be_focused()
    expect(box(page)).to_have_value(SENTENCE)
    assert_clean_harness(page)


def test_demo_typing_while_the_answer_streams_arrives_whole(open_page: Callable[..., Page], behaviour_server: LiveServer) -> None:
    """On the home page: the stream form card opens by itself while the person types their next request."""
    proxy = WsProxy()
    page = open_page(behaviour_server, "/", user="alice", before=proxy.attach)
    open_tray(page)
    ask(page, "Help me create a research stream")
    proxy.hold_types = {"complete"}
    chips(page).get_by_text("Oncology", exact=True).click()
    box(page).click()
    page.keyboard.type(SENTENCE[:9], delay=20)
    expect(page.locator(".chat-msg--live")).to_have_count(1)  # the answer is still being written (its end is held)
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while proxy.held_types() != ["complete"]:  # the answer's text has streamed, its end waits
        assert time.monotonic() < deadline, proxy.held_types()
        page.wait_for_timeout(50)  # lets Playwright deliver the frames to the proxy meanwhile
    proxy.release()  # the answer ends mid-sentence: the card opens by itself
    expect(panel(page)).to_be_visible()
    assert focused_in_box(page)
    page.keyboard.type(SENTENCE[9:], delay=20)
    expect(box(page)).to_have_value(SENTENCE)
    assert focused_in_box(page)
    shot(page, "demo_card_opened_while_typing")
    assert_clean(page)


@pytest.mark.parametrize("where", ["harness", "demo"])
def test_on_a_phone_the_card_is_readable_and_decided_on_the_card(
    where: str, harness: Callable[..., Page], fake: FakeProtocolServer, open_page: Callable[..., Page], behaviour_server: LiveServer,
) -> None:
    if where == "harness":
        fake.script = proposal_script()
        page = harness(viewport=PHONE)
        send(page, "propose a new name")
    else:
        page = open_page(behaviour_server, "/", viewport=PHONE, user="alice")
        open_tray(page)
        ask(page, "Help me create a research stream")
        chips(page).get_by_text("Oncology", exact=True).click()
    card = panel(page)
    expect(card).to_be_visible()
    wait_idle(page)
    box_ = card.bounding_box()
    assert box_ and box_["x"] >= 0 and box_["width"] <= PHONE["width"] and box_["height"] <= PHONE["height"], box_
    footer = card.locator(".chat-panel__footer")
    accept = footer.locator(".chat-btn--primary")
    reject = footer.get_by_role("button", name="Reject")
    for button in (accept, reject):
        expect(button).to_be_visible()
        expect(button).to_be_in_viewport(ratio=1)  # reachable without leaving the card
    # the card's text is readable: it is not behind the tray, and the card's body scrolls within the screen
    assert page.evaluate("(() => { const b = document.querySelector('.chat-panel__body').getBoundingClientRect();"
                         " return document.elementFromPoint(b.left + 20, b.top + 20)?.closest('.chat-panel') !== null; })()")
    shot(page, f"phone_card_{where}")
    if where == "harness":
        accept.click()
        expect(card).to_be_hidden()
        expect(page.locator("#stream-name")).to_have_value("Oncology Radar")
    else:
        expect(accept).to_have_text("Accept & Create stream")  # the answer's own server action, on the card
        before = behaviour_server.query("SELECT count(*) FROM pagechat_demo_researchstream")[0][0]
        accept.click()
        expect(final_messages(page).last).to_contain_text("Created Oncology Intelligence")
        assert behaviour_server.query("SELECT count(*) FROM pagechat_demo_researchstream")[0][0] == before + 1
        expect(final_messages(page).nth(-2).locator(".chat-payload-outcome")).to_have_text("accepted")
    if where == "harness":
        assert_clean_harness(page)
    else:
        assert_clean(page)


# ---- 6: the page learns what changed ----------------------------------------------------------------------------


def test_harness_the_page_hears_what_a_tool_and_an_action_changed(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        if frame.get("interaction_type") == "action_executed":
            await run.stream_text("Created.")
            run.complete(action_result={"action": "create_stream", "status": "succeeded", "refresh": True,
                                        "changes": [{"entity": "research_stream", "id": 9, "kind": "created", "fields": {"name": "New"}}]})
            return
        run.emit("tool_start", tool="rename_stream", input={"stream_id": 1, "new_name": "Oncology Radar"}, tool_use_id="t1")
        await asyncio.sleep(0.05)
        run.emit("tool_complete", tool="rename_stream", index=0,
                 changes=[{"entity": "research_stream", "id": 1, "kind": "updated", "fields": {"name": "Oncology Radar"}}])
        await run.gate("answer")  # the page hears of the change before the answer ends
        await run.stream_text("Renamed.")
        run.complete(suggested_actions=[{"label": "Create", "action": "create_stream", "handler": "server", "data": {"n": 1}, "token": "t"}])

    fake.script = script
    page = harness()
    send(page, "rename stream 1 to Oncology Radar")
    until(page, "window.__changes.length === 1")
    assert page.evaluate("window.__changes") == [
        {"entity": "research_stream", "id": 1, "kind": "updated", "fields": {"name": "Oncology Radar"}, "tool": "rename_stream"}]
    fake.open_gate("answer")
    wait_idle(page)
    page.get_by_role("button", name="Create").click()
    until(page, "window.__changes.length === 2")
    assert page.evaluate("window.__changes[1]") == {
        "entity": "research_stream", "id": 9, "kind": "created", "fields": {"name": "New"}, "action": "create_stream"}
    assert_clean_harness(page)


def test_demo_pages_show_a_rename_and_a_new_report_without_a_reload(open_page: Callable[..., Page], behaviour_server: LiveServer) -> None:
    sid = stream_id(behaviour_server, "CRISPR Therapeutics Watch")
    page = open_page(behaviour_server, "/research-streams/")
    title = page.locator(f'.stream-card[data-stream-id="{sid}"] .stream-card__title a')
    expect(title).to_have_text("CRISPR Therapeutics Watch")
    open_tray(page)
    send(page, f"Rename stream {sid} to Gene Editing Radar")
    page.locator(".chat-approval").get_by_role("button", name="Approve").click()
    expect(title).to_have_text("Gene Editing Radar")  # in place: the list shows the new name
    until(page, "window.__changes.length >= 1")
    detail = page.evaluate("window.__changes[0]")
    assert detail == {"entity": "research_stream", "id": sid, "kind": "updated", "fields": {"name": "Gene Editing Radar"}, "tool": "rename_stream"}
    assert page.evaluate("window.__notReloaded") is True
    wait_idle(page)
    shot(page, "demo_list_renamed_in_place")

    # the stream's own page: its header and breadcrumb, and the document's title, follow a rename at once
    page.goto(f"{behaviour_server.url}/research-streams/{sid}/")
    expect(page.locator("#stream-title")).to_have_text("Gene Editing Radar")
    page.evaluate("""(id) => document.dispatchEvent(new CustomEvent("pagechat:changed", {detail:
        {entity: "research_stream", id, kind: "updated", fields: {name: "Gene Editing Beacon"}, tool: "rename_stream"}}))""", sid)
    expect(page.locator("#stream-title")).to_have_text("Gene Editing Beacon")
    expect(page.locator(".breadcrumbs [data-field=name]")).to_have_text("Gene Editing Beacon")
    assert "Gene Editing Beacon" in page.title()

    # home: create a stream, then "Run test report": the report count goes up in place
    page.goto(f"{behaviour_server.url}/")
    reports = page.locator("#home-stats .stat").nth(1).locator("dd")
    before = int(reports.inner_text())
    ask(page, "Help me create a research stream")
    chips(page).get_by_text("Cardiology", exact=True).click()
    wait_idle(page)
    actions(page).get_by_role("button", name="Accept & Create stream").click()
    expect(final_messages(page).last).to_contain_text("Created")
    wait_idle(page)
    actions(page).get_by_role("button", name="Run test report").click()
    expect(final_messages(page).last).to_contain_text("Test report")
    expect(reports).to_have_text(str(before + 1))
    kinds = page.evaluate("window.__changes.map(c => [c.entity, c.kind, c.action])")
    assert kinds == [["research_stream", "created", "create_stream"], ["report", "created", "run_test_report"]]
    assert page.evaluate("window.__notReloaded") is True
    shot(page, "demo_home_report_counted_in_place")
    assert_clean(page)


def test_demo_edit_page_shows_a_rename_approved_in_the_tray_without_a_reload(open_page: Callable[..., Page], behaviour_server: LiveServer) -> None:
    """On the stream's own settings page, a rename approved in the chat (a tool, not the update_config action) shows in
    the heading, the breadcrumb, the document's title and the name field; a name field the person has edited keeps theirs."""
    original = "Lung Cancer Immunotherapy Monitor"
    sid = stream_id(behaviour_server, original)
    page = open_page(behaviour_server, f"/research-streams/{sid}/?tab=semantic")
    heading, field = page.locator("#stream-title"), page.locator("#field-stream-name")
    expect(heading).to_have_text(original)
    expect(field).to_have_value(original)
    open_tray(page)
    send(page, f"Rename stream {sid} to Thoracic Oncology Radar")
    approval = page.locator(".chat-approval")
    expect(approval.locator(".chat-approval__summary")).to_have_text(f"Rename “{original}” to “Thoracic Oncology Radar”?")
    approval.get_by_role("button", name="Approve").click()
    expect(heading).to_have_text("Thoracic Oncology Radar")
    expect(page.locator(".breadcrumbs [data-field=name]")).to_have_text("Thoracic Oncology Radar")
    expect(field).to_have_value("Thoracic Oncology Radar")
    assert page.title().startswith("Thoracic Oncology Radar ·"), page.title()
    # the field took it as its saved value: the tab has nothing unsaved (leaving it asks nothing)
    assert page.evaluate("(() => { const f = document.getElementById('field-stream-name'); return f.value === f.defaultValue; })()")
    until(page, "window.__changes.length >= 1")
    assert page.evaluate("window.__changes[0]") == {
        "entity": "research_stream", "id": sid, "kind": "updated", "fields": {"name": "Thoracic Oncology Radar"}, "tool": "rename_stream"}
    assert page.evaluate("window.__notReloaded") is True
    wait_idle(page)
    shot(page, "demo_edit_renamed_in_place")

    # the person is typing a name of their own: the heading follows the next rename, their field keeps what they typed
    field.fill("My own name")
    send(page, f"Rename stream {sid} to {original}")
    page.locator(".chat-approval").last.get_by_role("button", name="Approve").click()
    expect(heading).to_have_text(original)
    expect(field).to_have_value("My own name")
    assert page.title().startswith(f"{original} ·"), page.title()
    assert page.evaluate("window.__notReloaded") is True
    wait_idle(page)
    assert behaviour_server.query("SELECT name FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0] == original
    assert_clean(page)


# ---- 7: editing ---------------------------------------------------------------------------------------------


def test_cancel_and_escape_give_the_box_back_and_clicks_are_not_editable(open_page: Callable[..., Page], behaviour_server: LiveServer) -> None:
    page = open_page(behaviour_server, "/", user="alice")
    open_tray(page)
    ask(page, "Help me create a research stream")
    message = box(page)
    message.fill("half a thought")
    edit = page.locator(".chat-msg--user").last.get_by_role("button", name="Edit")
    for leave in ("Escape", "Cancel edit"):
        edit.click()
        expect(message).to_have_value("Help me create a research stream")
        if leave == "Escape":
            page.keyboard.press("Escape")
        else:
            page.get_by_role("button", name="Cancel edit").click()
        expect(message).to_have_value("half a thought")  # exactly what it held before editing began
        expect(page.locator(".chat-editing")).to_be_hidden()
        expect(message).to_be_focused()
    expect(page.locator(".chat-tray")).to_be_visible()  # Escape left the edit, not the tray

    # a chip (value_selected) and a button click (action_executed) are not words to edit
    chips(page).get_by_text("Oncology", exact=True).click()
    wait_idle(page)
    expect(page.locator(".chat-msg--user").last.get_by_role("button", name="Edit")).to_have_count(0)
    message.fill("")
    message.press("ArrowUp")
    expect(page.locator(".chat-editing")).to_be_hidden()
    expect(message).to_have_value("")
    actions(page).get_by_role("button", name="Accept & Create stream").click()
    wait_idle(page)
    expect(page.locator(".chat-msg--user").last).to_have_text("Accept & Create stream")
    expect(page.locator(".chat-msg--user").last.get_by_role("button", name="Edit")).to_have_count(0)
    message.press("ArrowUp")
    expect(page.locator(".chat-editing")).to_be_hidden()
    # after a reload the stored questions say how they were asked: still no Edit on the click
    page.reload()
    expect(final_messages(page)).to_have_count(3)
    expect(page.locator(".chat-msg--user").last.get_by_role("button", name="Edit")).to_have_count(0)
    assert_clean(page)


def test_editing_the_first_question_renames_the_conversation(open_page: Callable[..., Page], behaviour_server: LiveServer) -> None:
    page = open_page(behaviour_server, "/reports/")
    open_tray(page)
    ask(page, "search articles about CRISPR gene editing")
    cid = conversation_id(page)
    # the title of the first exchange (the offline model's provider makes no model call for it: from the question)
    behaviour_server.wait_for_row("SELECT 1 FROM pagechat_conversation WHERE id = ? AND title = ?", cid, "Search articles CRISPR gene editing")
    page.locator(".chat-panel").get_by_role("button", name="Close panel").click()
    page.locator(".chat-msg--user").last.get_by_role("button", name="Edit").click()
    box(page).fill("search articles about immunotherapy biomarkers")
    box(page).press("Enter")
    wait_idle(page)
    renamed = "Search articles immunotherapy biomarkers"  # from the edited first question
    behaviour_server.wait_for_row("SELECT 1 FROM pagechat_conversation WHERE id = ? AND title = ?", cid, renamed)
    page.get_by_role("button", name="History").click()
    expect(page.locator(".chat-conversations")).to_contain_text(renamed)
    assert_clean(page)


# ---- 10: one accept path --------------------------------------------------------------------------------------


def test_harness_accepting_the_card_disables_the_chats_buttons_for_it(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    same = {"label": "Update config", "action": "update_config", "handler": "server", "data": PROPOSAL, "token": "tok"}
    opposite = {"label": "Cancel", "action": "cancel", "handler": "client"}
    other = {"label": "Highlight", "action": "highlight", "handler": "client", "data": {"selector": "#target"}}
    fake.script = proposal_script(actions=[same, opposite, other])
    page = harness()
    send(page, "propose a new name")
    card = page.get_by_role("dialog", name="Schema Proposal")
    expect(card).to_be_visible()
    wait_idle(page)
    card.get_by_role("button", name="Accept").click()
    expect(page.locator("#stream-name")).to_have_value("Oncology Radar")
    group = page.get_by_role("group", name="Suggested actions")
    expect(group.get_by_role("button", name="Update config")).to_be_disabled()  # would do the same again
    expect(group.get_by_role("button", name="Cancel")).to_be_disabled()  # would undo the decision
    expect(group.get_by_role("button", name="Highlight")).to_be_enabled()  # unrelated: still there
    shot(page, "harness_accepted_disables_same_and_opposite")
    assert fake.frames_of("chat.send")[-1].get("interaction_type", "text_input") == "text_input"  # nothing sent twice

    # the other way round: the chat's button decides the proposal, for the card too
    fake.script = proposal_script(actions=[same, opposite])
    send(page, "propose again")
    expect(card).to_be_visible()
    wait_idle(page)
    page.get_by_role("group", name="Suggested actions").get_by_role("button", name="Update config").click()
    sent = fake.wait_for_frame("chat.send", 3)[-1]
    assert sent["interaction_type"] == "action_executed" and sent["action_metadata"]["action_identifier"] == "update_config"
    expect(final_messages(page).nth(1).locator(".chat-payload-outcome")).to_have_text("accepted")
    assert_clean_harness(page)


def test_harness_a_card_without_its_own_accept_gets_the_answers_action(harness: Callable[..., Page], fake: FakeProtocolServer) -> None:
    """A type with no renderer (the fallback card) whose answer offers the server action that applies it."""
    same = {"label": "Apply the proposal", "action": "apply_it", "handler": "server", "data": PROPOSAL, "token": "tok"}
    fake.script = proposal_script(actions=[same, {"label": "Cancel", "action": "cancel", "handler": "client"}], payload_type="mystery_proposal")
    page = harness()
    send(page, "propose")
    wait_idle(page)
    page.get_by_role("button", name="View details").click()
    card = panel(page)
    expect(card).to_be_visible()
    primary = card.locator(".chat-panel__footer .chat-btn--primary")
    expect(primary).to_have_text("Apply the proposal")
    primary.click()
    sent = fake.wait_for_frame("chat.send", 2)[-1]
    assert sent["interaction_type"] == "action_executed"
    assert sent["action_metadata"] == {"action_identifier": "apply_it", "action_data": PROPOSAL, "token": "tok"}
    expect(card).to_be_hidden()
    expect(final_messages(page).first.locator(".chat-payload-outcome")).to_have_text("accepted")
    assert_clean_harness(page)


def test_demo_edit_page_card_accept_disables_update_config(open_page: Callable[..., Page], behaviour_server: LiveServer) -> None:
    sid = stream_id(behaviour_server, "Lung Cancer Immunotherapy Monitor")
    page = open_page(behaviour_server, f"/research-streams/{sid}/?tab=semantic")
    open_tray(page)
    ask(page, "propose a schema about tumor microenvironment")
    group = actions(page)
    update = group.get_by_role("button", name="Update config")
    expect(update).to_be_enabled()
    panel(page).get_by_role("button", name="Accept").click()
    expect(page.locator("#field-purpose")).to_have_value("Track advances in tumor microenvironment")  # filled, not saved
    expect(update).to_be_disabled()  # one accept path: the form holds it; saving it is the form's Save
    expect(group.get_by_role("button", name="Cancel")).to_be_disabled()
    shot(page, "demo_edit_accept_disables_update_config")
    page.reload()  # the decision is stored with the message: still disabled after a reload
    expect(actions(page).get_by_role("button", name="Update config")).to_be_disabled()
    assert_clean(page)


def assert_clean_harness(page: Page) -> None:
    violations = page.evaluate("window.__csp")
    assert violations == [], violations
    assert page.errors == [], page.errors  # type: ignore[attr-defined]
