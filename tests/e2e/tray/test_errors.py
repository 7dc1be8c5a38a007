"""Browser tests of the tray against the scripted fake protocol server: stopping a turn, a run's error and a refused send, each with Retry.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import UUID4, assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


def test_stop_shows_partial_text_marked_stopped(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("I was saying something long")
        await asyncio.sleep(60)

    server.script = script
    open_tray(page, server)
    send(page, "talk")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("I was saying something long")
    page.get_by_role("button", name="Stop generating").click()
    (cancel,) = server.wait_for_frame("chat.cancel")
    assert cancel["run_id"] == next(iter(server.runs))
    last = final_messages(page).last
    expect(last).to_contain_text("I was saying something long")
    expect(last.locator(".chat-tag--stopped")).to_have_text("stopped")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(page.get_by_role("button", name="Stop generating")).to_be_hidden()
    shot(page, "10_stopped")
    assert_clean(page)

def test_run_error_then_retry_answers_the_stored_question_again(page: Page, server: FakeProtocolServer) -> None:
    attempts: list[str] = []

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        attempts.append(frame["client_message_id"])
        if len(attempts) == 1:
            run.emit("error", code="provider_error", message="The model is overloaded.")
            return
        await run.stream_text("Worked this time.")
        run.complete(message_html="<p>Worked this time.</p>")

    server.script = script
    open_tray(page, server)
    send(page, "try me")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("The model is overloaded.")
    shot(page, "11_error_retry")
    alert.get_by_role("button", name="Retry").click()
    expect(final_messages(page).last).to_have_text("Worked this time.")
    expect(page.get_by_role("alert")).to_have_count(0)
    first, second = server.frames_of("chat.send")
    # the run had started, so the server stored the question: the retry regenerates its answer instead of sending
    # the question a second time (which would store it twice)
    assert first["message"] == "try me" and second["message"] == "" and second["replace_last"] == "answer"
    assert second["conversation_id"] is not None  # the conversation the failed run created
    assert first["client_message_id"] != second["client_message_id"]
    assert UUID4.match(second["client_message_id"])
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    expect(final_messages(page)).to_have_count(1)
    assert_clean(page)


def test_frame_level_busy_error_shows_retry(page: Page, server: FakeProtocolServer) -> None:
    server.next_send_error = {"code": "busy", "message": "A reply is still running in this conversation."}
    open_tray(page, server)
    send(page, "hello")
    expect(page.get_by_role("alert")).to_contain_text("A reply is still running")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    page.get_by_role("button", name="Retry").click()
    expect(final_messages(page)).to_have_text("You said: hello")
    assert_clean(page)
