"""The demo's server actions in a real browser against a live server: offered by the offline model as signed
buttons, clicked, answered in the conversation, and the page refreshed; refusals answered with a Close button.

A server of its own (it deletes a stream). Screenshots: artifacts/screenshots/live_actions_*.png.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from . import test_live_site
from .conftest import LiveServer
from .test_live_site import WsProxy, actions, ask, assert_clean, demo_id, final_messages, open_tray, panel, shot, stream_id, wait_idle

open_page = test_live_site.open_page  # the fixture, shared with the live-site tests

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def actions_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    return start_live_server("actions", CHAT_OFFLINE_DELAY="0.005")


def click_action(page: Page, name: str) -> Any:
    """Click a suggested action button and return the reply it gets."""
    before = final_messages(page).count()
    actions(page).get_by_role("button", name=name).click()
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    return final_messages(page).last


def action_stat(server: LiveServer, page: str, action: str) -> tuple[int, ...]:
    rows = server.query("SELECT offered, clicked, succeeded, failed, rejected FROM pagechat_actionstat WHERE page = ? AND action = ?", page, action)
    return rows[0] if rows else (0, 0, 0, 0, 0)


def test_update_config_saves_the_proposal_and_refreshes_the_page(open_page: Callable[..., Page], actions_server: LiveServer) -> None:
    sid = stream_id(actions_server, "Lung Cancer Immunotherapy Monitor")
    page = open_page(actions_server, f"/research-streams/{sid}/?tab=semantic", goto=False)
    proxy = WsProxy().attach(page)
    page.goto(f"{actions_server.url}/research-streams/{sid}/?tab=semantic")
    open_tray(page)
    ask(page, "propose a schema about tumor microenvironment")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Schema proposal")
    expect(actions(page).get_by_role("button", name="Delete entity")).to_have_count(0)
    reply = click_action(page, "Update config")
    expect(reply).to_contain_text("Saved the semantic space settings of Lung Cancer Immunotherapy Monitor")
    # the page's main region was reloaded from the server: the saved values show without a navigation
    expect(page.locator("#main")).to_have_attribute("data-refreshed", "1")
    expect(page.locator("#field-purpose")).to_have_value("Track advances in tumor microenvironment")
    expect(page.locator("#field-topics")).to_have_value("tumor microenvironment\ntumor microenvironment biomarkers")
    expect(page.locator("#page-notice")).to_have_text("Settings saved from the chat.")
    expect(page.locator(".chat-tray")).to_be_visible()
    purpose = actions_server.query("SELECT purpose FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0]
    assert purpose == "Track advances in tumor microenvironment"
    shot(page, "actions_update_config")

    # The same button again (a double click in a stale tab): answered with a Close button, nothing saved twice.
    used = [f["action_metadata"] for f in proxy.sent("chat.send") if f.get("interaction_type") == "action_executed"]
    assert len(used) == 1
    before = final_messages(page).count()
    page.evaluate("meta => window.pagechat.getTray().send('Update config', 'action_executed', meta)", used[0])
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    expect(final_messages(page).last).to_contain_text("This button was already used. Nothing was done again.")
    expect(page.locator("#main")).to_have_attribute("data-refreshed", "1")  # a refused action refreshes nothing
    assert action_stat(actions_server, "edit_research_stream", "update_config") == (1, 2, 1, 0, 1)
    assert_clean(page)


def test_delete_asks_for_confirmation_and_a_used_button_is_answered(open_page: Callable[..., Page], actions_server: LiveServer) -> None:
    sid = stream_id(actions_server, "CRISPR Therapeutics Watch")
    page = open_page(actions_server, f"/research-streams/{sid}/", goto=False)
    proxy = WsProxy().attach(page)
    page.goto(f"{actions_server.url}/research-streams/{sid}/")
    open_tray(page)
    ask(page, "delete this stream")
    confirm = click_action(page, "Delete entity")
    expect(confirm).to_contain_text("Delete CRISPR Therapeutics Watch with its 2 channels and 0 reports? This cannot be undone.")
    expect(actions(page).get_by_role("button", name="Keep it")).to_be_visible()
    shot(page, "actions_delete_confirm")
    assert actions_server.query("SELECT count(*) FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0] == 1  # asked, not done
    actions(page).get_by_role("button", name="Yes, delete it").click()
    # deleted: the stream's page is gone, the tray follows to the streams list with the conversation
    expect(page).to_have_url(f"{actions_server.url}/research-streams/")
    expect(page.locator("#main")).not_to_contain_text("CRISPR Therapeutics Watch")
    expect(final_messages(page).last).to_contain_text("Deleted CRISPR Therapeutics Watch.")
    assert actions_server.query("SELECT count(*) FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0] == 0

    # The confirmation button once more (as a stale tab would send it), from this page where no delete action
    # exists: answered in the conversation, never run.
    used = [f["action_metadata"] for f in proxy.sent("chat.send") if (f.get("action_metadata") or {}).get("action_data", {}).get("confirmed")]
    assert len(used) == 1
    open_tray_if_closed(page)
    before = final_messages(page).count()
    page.evaluate("meta => window.pagechat.getTray().send('Yes, delete it', 'action_executed', meta)", used[0])
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    expect(final_messages(page).last).to_contain_text("Unknown action: delete_entity. Nothing was done.")
    actions(page).get_by_role("button", name="Close").click()
    expect(page.locator(".chat-tray")).to_be_hidden()
    # offered by the model and by the confirmation, both clicked on the stream's page; the stale click elsewhere
    assert action_stat(actions_server, "edit_research_stream", "delete_entity") == (2, 2, 2, 0, 0)
    assert action_stat(actions_server, "streams_list", "delete_entity") == (0, 1, 0, 0, 1)
    assert_clean(page)


def open_tray_if_closed(page: Page) -> None:
    if not page.locator(".chat-tray").is_visible():
        page.get_by_role("button", name="Open chat").click()
    expect(page.locator(".chat-tray")).to_be_visible()


def test_execute_search_and_apply_filters_on_the_reports_page(open_page: Callable[..., Page], actions_server: LiveServer) -> None:
    page = open_page(actions_server, "/reports/")
    open_tray(page)
    ask(page, "filter criteria for lung cancer")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Search filters")
    expect(panel(page)).to_contain_text("lung cancer")
    reply = click_action(page, "Execute search")
    expect(reply).to_contain_text(re.compile(r"Found \d+ articles matching your criteria"))
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Search results")
    expect(panel(page).locator("a.chat-article__title").first).to_be_visible()
    shot(page, "actions_execute_search")

    ask(page, "filter criteria for lung cancer")
    reply = click_action(page, "Apply filters")
    expect(reply).to_contain_text("Filtered the reports list: 1 report matches.")
    # the reports list itself shows the filter (reloaded in place, its address updated)
    expect(page).to_have_url(f"{actions_server.url}/reports/?q=lung+cancer&year_from=2022")
    expect(page.locator("#reports-query")).to_contain_text("lung cancer")
    expect(page.locator("#reports-table tbody tr")).to_have_count(1)
    expect(panel(page)).to_contain_text("Applied to the reports list: 1 match.")
    shot(page, "actions_apply_filters")
    assert action_stat(actions_server, "reports", "execute_search")[1:3] == (1, 1)
    assert action_stat(actions_server, "reports", "apply_filters")[1:3] == (1, 1)
    assert_clean(page)


def test_validate_form_shows_the_verdict_and_changes_nothing(open_page: Callable[..., Page], actions_server: LiveServer) -> None:
    page = open_page(actions_server, "/research-streams/new/")
    streams_before = actions_server.query("SELECT count(*) FROM pagechat_demo_researchstream WHERE owner_id = ?", demo_id(actions_server))[0][0]
    open_tray(page)
    ask(page, "give me a stream template about immunotherapy")
    reply = click_action(page, "Validate form")
    expect(reply).to_contain_text("The proposal passes the form's checks.")
    expect(panel(page).locator(".chat-panel__title")).to_have_text("Validation results")
    expect(panel(page)).to_contain_text("No errors found.")
    expect(page.locator("#page-notice")).to_contain_text("The proposal passes the form's checks.")
    expect(page.locator("#field-stream-name")).to_have_value("")  # validating fills nothing
    assert actions_server.query("SELECT count(*) FROM pagechat_demo_researchstream WHERE owner_id = ?", demo_id(actions_server))[0][0] == streams_before
    shot(page, "actions_validate_form")
    assert_clean(page)


def test_unknown_action_is_answered_in_the_conversation(open_page: Callable[..., Page], actions_server: LiveServer) -> None:
    page = open_page(actions_server, "/reports/")
    open_tray(page)
    ask(page, "hello")
    before = final_messages(page).count()
    meta = {"action_identifier": "drop_database", "action_data": {"really": True}, "token": None}
    page.evaluate("meta => window.pagechat.getTray().send('Drop it', 'action_executed', meta)", meta)
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    reply = final_messages(page).last
    expect(reply).to_contain_text("Unknown action: drop_database. Nothing was done.")
    expect(page.locator(".chat-error")).to_have_count(0)  # a reply, not an error banner
    shot(page, "actions_unknown")
    actions(page).get_by_role("button", name="Close").click()
    expect(page.locator(".chat-tray")).to_be_hidden()
    assert action_stat(actions_server, "reports", "drop_database") == (0, 1, 0, 0, 1)
    assert_clean(page)


def test_new_payload_cards_render_with_their_icons(open_page: Callable[..., Page], actions_server: LiveServer) -> None:
    page = open_page(actions_server, "/reports/")
    open_tray(page)
    title, icon = panel(page).locator(".chat-panel__title"), panel(page).locator(".chat-panel__icon svg")
    ask(page, "give query alternatives for KRAS")
    expect(title).to_have_text("Query suggestion")
    expect(icon).to_be_visible()
    expect(panel(page).locator(".chat-query-suggestion__query")).to_have_text("KRAS AND (trial OR cohort)")
    ask(page, "suggest an AI column for tumor size")
    expect(title).to_have_text("AI column suggestion")
    expect(icon).to_be_visible()
    expect(panel(page)).to_contain_text("Rate from 1 to 5")
    # the web_search tool with the demo's backend: it says it searched the corpus, and links stay on this site
    ask(page, "search the web for CRISPR")
    expect(title).to_have_text("Web search results")
    expect(panel(page).locator(".chat-web-search__backend")).to_have_text(
        "Demo search backend: these results come from this site's own article corpus, not from the web.")
    links = panel(page).locator("a.chat-article__title")
    expect(links.first).to_be_visible()
    assert all(re.fullmatch(r"/articles/\d+/", links.nth(i).get_attribute("href") or "") for i in range(links.count()))
    expect(final_messages(page).last.locator(".chat-tool-card")).to_contain_text("Web search")  # its title, never its name
    shot(page, "actions_web_search")
    assert_clean(page)
