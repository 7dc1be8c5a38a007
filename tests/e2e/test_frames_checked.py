"""The browser tests check every frame a live product server sends against the published protocol schema."""
from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import FRAMES, LiveServer

pytestmark = pytest.mark.e2e


def test_frames_a_browser_receives_are_validated(chromium: Any, site_server: LiveServer) -> None:
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        page.goto(f"{site_server.url}/")
        page.get_by_label("Username").fill("demo")
        page.get_by_label("Password").fill("demo")
        page.locator("#login-submit").click()
        before = FRAMES.validated
        page.get_by_role("button", name="Open chat").click()
        box = page.get_by_label("Message")
        box.fill("hello")
        box.press("Enter")
        expect(page.locator(".chat-msg--assistant:not(.chat-msg--live)")).to_have_count(1)
        # a whole turn arrived over the websocket, each frame checked by the page hook (not one skipped)
        assert FRAMES.validated - before >= 3
        assert not FRAMES.violations
        FRAMES.received(f"ws://127.0.0.1:{next(iter(FRAMES.product_ports))}/ws/", '{"type": "text_delta"}')
        assert FRAMES.violations, "a frame outside the schema must be reported"
        FRAMES.violations.clear()
    finally:
        context.close()
