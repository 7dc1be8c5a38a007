"""The specs' example conversation in a real browser with the offline model, end to end: area chips -> form ->
refine (more channels, a new name from suggestions) -> create -> Run test report (a signed server action that
searches the corpus with the stream's queries and saves a report) -> open the report."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from .conftest import LiveServer
from .test_live_site import actions, assert_clean, chips, conversation_id, demo_id, final_messages, open_page, panel, shot, wait_idle  # noqa: F401  (open_page is a fixture)

pytestmark = pytest.mark.e2e


def click_chip(page: Page, label: str) -> None:
    before = final_messages(page).count()
    chips(page).get_by_text(label, exact=True).click()
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)


def test_example_conversation_chips_form_refine_create_test_report(open_page: Callable[..., Page], site_server: LiveServer) -> None:  # noqa: F811
    page = open_page(site_server, "/")
    page.locator("#home-create-with-assistant").click()
    expect(chips(page)).to_have_text(["Oncology", "Cardiology", "Neurology", "Immunology"])
    wait_idle(page)

    click_chip(page, "Oncology")
    expect(panel(page)).to_contain_text("Oncology Intelligence")
    expect(chips(page)).to_have_text(["Change name", "Add more channels", "Different frequency"])
    shot(page, "example_01_form_refinements")

    click_chip(page, "Add more channels")
    expect(panel(page)).to_contain_text("Oncology Regulatory")
    expect(panel(page)).to_contain_text("Oncology News")

    click_chip(page, "Change name")
    reply = final_messages(page).last
    expect(reply).to_contain_text("What would you like to name the stream?")
    expect(reply.locator(".chat-view-payload")).to_have_count(0)  # a question with suggestions, not the form again
    expect(chips(page)).to_have_text(["Oncology Research Monitor", "Oncology Watch", "Let me type it"])
    shot(page, "example_02_name_suggestions")

    click_chip(page, "Oncology Watch")
    expect(panel(page)).to_contain_text("Oncology Watch")
    expect(panel(page)).to_contain_text("Oncology Regulatory")  # the earlier refinement is kept

    actions(page).last.get_by_role("button", name="Accept & Create stream").click()
    expect(final_messages(page).last).to_contain_text("Created Oncology Watch")
    wait_idle(page)
    new_id = site_server.wait_for_row(
        "SELECT id FROM pagechat_demo_researchstream WHERE name = 'Oncology Watch' AND owner_id = ?", demo_id(site_server))[0]
    assert site_server.query("SELECT count(*) FROM pagechat_demo_channel WHERE stream_id = ?", new_id)[0][0] == 4
    buttons = actions(page).last.get_by_role("button")
    expect(buttons).to_have_text(["View stream", "Run test report", "Create another", "Close"])
    shot(page, "example_03_created")

    actions(page).last.get_by_role("button", name="Run test report").click()
    expect(final_messages(page).last).to_contain_text("Test report for Oncology Watch")
    wait_idle(page)
    report_id, title = site_server.wait_for_row("SELECT id, title FROM pagechat_demo_report WHERE stream_id = ?", new_id)
    assert title == "Test report: Oncology Watch"
    count = site_server.query("SELECT count(*) FROM pagechat_demo_report_articles WHERE report_id = ?", report_id)[0][0]
    assert count > 0
    expect(final_messages(page).last).to_contain_text(f"{count} articles")
    shot(page, "example_04_test_report")
    kinds = [r[0] for r in site_server.query(
        "SELECT interaction_type FROM pagechat_message WHERE conversation_id = ? AND role = 'user' ORDER BY id", conversation_id(page))]
    assert kinds == ["text_input", "value_selected", "value_selected", "value_selected", "value_selected", "action_executed", "action_executed"]

    actions(page).last.get_by_role("button", name="Open report").click()
    expect(page).to_have_url(f"{site_server.url}/reports/{report_id}/")
    expect(page.locator("body")).to_contain_text("Test report: Oncology Watch")
    assert_clean(page)
