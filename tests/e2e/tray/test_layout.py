"""Browser tests of the tray against the scripted fake protocol server: the tray's layout: the wide view, a phone's full-width sheet.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from ..conftest import CSP_LISTENER
from ..fake_protocol_server import FakeProtocolServer
from .harness import assert_clean, goto, open_tray, proposal_turn, send, shot

pytestmark = pytest.mark.e2e


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
