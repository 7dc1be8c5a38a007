"""Browser tests of the tray against the scripted fake protocol server: the staff-only diagnostics of an answer.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


DIAGNOSTICS = {
    "model": "claude-sonnet-4-5",
    "tools": ["search_articles"],
    "system_prompt": "IDENTITY <script>alert(1)</script>",
    "messages": [{"role": "user", "content": "hi"}],
    "raw_output": {"content": [{"type": "text", "text": "hello"}]},
    "usage": {"input_tokens": 10, "output_tokens": 20},
    "timings": {"first_event_ms": 3},
}


@pytest.mark.parametrize("staff", [True, False])
def test_staff_diagnostics(page: Page, server: FakeProtocolServer, staff: bool) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.complete(message="hello", message_html="<p>hello</p>", **({"diagnostics": DIAGNOSTICS} if staff else {}))

    server.script = script
    open_tray(page, server, "staff=1" if staff else "")
    send(page, "hi")
    expect(final_messages(page)).to_have_text(re.compile("hello"))
    button = page.get_by_role("button", name="Diagnostics")
    if not staff:
        expect(button).to_have_count(0)
        return
    button.click()
    panel = page.get_by_role("dialog", name="Diagnostics")
    expect(panel).to_contain_text("claude-sonnet-4-5")
    expect(panel).to_contain_text('"output_tokens": 20')
    panel.get_by_text("system prompt").click()
    expect(panel).to_contain_text("IDENTITY <script>alert(1)</script>")
    assert panel.locator("script").count() == 0
    shot(page, "14_diagnostics")
    assert_clean(page)
