"""Helpers of the tray's browser tests: going to the harness page, opening the tray, sending, reading answers, the
clean-page check, and a scripted turn with a proposal more than one feature uses."""
from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from ..conftest import screenshot
from ..fake_protocol_server import FakeProtocolServer, FakeRun

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def shot(page: Page, name: str) -> None:
    screenshot(page, name)


def goto(page: Page, server: FakeProtocolServer, query: str = "", path: str = "/") -> None:
    page.goto(f"{server.http_url}{path}?{query}")
    expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()


def open_tray(page: Page, server: FakeProtocolServer, query: str = "") -> None:
    goto(page, server, query)
    page.get_by_role("button", name="Open chat").click()
    expect(page.locator(".chat-tray")).to_be_visible()


def send(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def final_messages(page: Page):
    return page.locator(".chat-msg--assistant:not(.chat-msg--live)")


def row_action(page: Page, title: str, name: str) -> Any:
    """One of a listed conversation's actions (Rename, Pin, Download, Delete), from the row's menu."""
    page.get_by_role("button", name=f"Actions for conversation: {title}").click()
    return page.get_by_role("menuitem", name=name)


def assert_clean(page: Page, allowed_csp: tuple[str, ...] = ()) -> None:
    violations = [v for v in page.evaluate("window.__csp") if v not in allowed_csp]
    assert violations == [], f"CSP violations: {violations}"
    assert page.errors == [], page.errors  # type: ignore[attr-defined]


async def proposal_turn(run: FakeRun, frame: dict[str, Any]) -> None:
    await run.stream_text("Here is a proposal.")
    run.complete(
        message_html="<p>Here is a proposal.</p>",
        custom_payload={
            "payload_id": "p-1",
            "type": "schema_proposal",
            "summary": "Rename the stream",
            "data": {"proposed_changes": {"stream_name": "Oncology Monitor <img src=x onerror=alert(1)>", "purpose": "Track"}},
        },
    )
