"""Browser tests of the tray against the scripted fake protocol server: what the reader does with an answer: regenerate (earlier versions), continue one cut at a limit.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


def test_regenerate_keeps_the_earlier_answer_as_a_version_to_page_back_to(page: Page, server: FakeProtocolServer) -> None:
    takes = iter(["The first take.", "The second take.", "The third take."])

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        text = next(takes)
        await run.stream_text(text)
        run.complete(message_html=f"<p>{text}</p>")

    server.script = script
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.http_url)
    open_tray(page, server)
    send(page, "try twice")
    expect(final_messages(page).last).to_contain_text("The first take.")
    expect(page.get_by_role("group", name="Versions of this answer")).to_have_count(0)  # one version: no pager
    for n, text in ((2, "The second take."), (3, "The third take.")):
        final_messages(page).last.get_by_role("button", name="Regenerate").click()
        expect(final_messages(page).last.locator(".chat-bubble")).to_have_text(text)
        expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_contain_text(f"{n} / {n}")
    assert [f["replace_last"] for f in server.frames_of("chat.send")[1:]] == ["answer", "answer"]
    answer = final_messages(page).last
    pager = answer.get_by_role("group", name="Versions of this answer")
    pager.get_by_role("button", name="Previous version").click()
    pager.get_by_role("button", name="Previous version").click()
    expect(pager).to_contain_text("1 / 3")
    expect(answer.locator(".chat-bubble")).to_have_text("The first take.")
    expect(pager.get_by_role("button", name="Previous version")).to_be_disabled()
    answer.get_by_role("button", name="Copy", exact=True).click()  # copies the version shown
    expect(page.locator(".chat-notice")).to_have_text("Copied to clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == "The first take."
    shot(page, "10c_answer_versions")
    pager.get_by_role("button", name="Next version").click()
    expect(answer.locator(".chat-bubble")).to_have_text("The second take.")
    expect(final_messages(page)).to_have_count(1)
    # a question has Copy too, as in ChatGPT and Claude.ai
    page.get_by_role("group", name="Question actions").get_by_role("button", name="Copy").click()
    expect(page.locator(".chat-notice")).to_have_text("Copied to clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == "try twice"
    assert_clean(page)


def test_a_failed_regenerate_keeps_the_earlier_answer_in_reach_and_a_refused_one_puts_it_back(page: Page, server: FakeProtocolServer) -> None:
    outcomes = iter(["The first take.", None, "The second take."])  # None: the run fails before any text

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        text = next(outcomes)
        if text is None:
            run.emit("error", code="provider_error", message="The model is overloaded.")
            return
        await run.stream_text(text)
        run.complete(message_html=f"<p>{text}</p>")

    server.script = script
    open_tray(page, server)
    send(page, "try again")
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text("The first take.")
    # refused before any run (busy): nothing was replaced, so the answer comes back as it was
    server.next_send_error = {"code": "busy", "message": "A reply is still running in this conversation."}
    final_messages(page).last.get_by_role("button", name="Regenerate").click()
    expect(page.get_by_role("alert")).to_contain_text("A reply is still running")
    expect(final_messages(page)).to_have_count(1)
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text("The first take.")
    expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_have_count(0)
    # the run fails before writing: its (empty) answer shows, with the earlier one a click away
    page.get_by_role("alert").get_by_role("button", name="Retry").click()
    expect(page.get_by_role("alert")).to_contain_text("The model is overloaded.")
    failed = final_messages(page).last
    expect(final_messages(page)).to_have_count(1)
    expect(failed.locator(".chat-tag--error")).to_have_text("incomplete")
    pager = failed.get_by_role("group", name="Versions of this answer")
    expect(pager).to_contain_text("2 / 2")
    pager.get_by_role("button", name="Previous version").click()
    expect(failed.locator(".chat-bubble")).to_have_text("The first take.")
    # Retry regenerates again: the empty answer is not one more version
    page.get_by_role("alert").get_by_role("button", name="Retry").click()
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text("The second take.")
    expect(final_messages(page).last.get_by_role("group", name="Versions of this answer")).to_contain_text("2 / 2")
    expect(final_messages(page)).to_have_count(1)
    assert [f.get("replace_last") for f in server.frames_of("chat.send")] == [None, "answer", "answer", "answer"]
    assert_clean(page)


def test_an_answer_cut_at_a_limit_says_so_and_continues(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        if frame["message"] == "Continue":
            await run.stream_text("and that is the end of it.")
            run.complete(message_html="<p>and that is the end of it.</p>")
            return
        await run.stream_text("The first half of a long answer, and then")
        run.complete(message_html="<p>The first half of a long answer, and then</p>", stop_reason="max_tokens")

    server.script = script
    open_tray(page, server)
    send(page, "tell me everything")
    cut = final_messages(page).first
    expect(cut.get_by_role("note")).to_contain_text("The answer stopped at its length limit.")
    shot(page, "10b_unfinished_answer")
    cut.get_by_role("button", name="Continue", exact=True).click()
    (_, again) = server.wait_for_frame("chat.send", count=2)
    assert again["message"] == "Continue" and again["interaction_type"] == "value_selected"
    assert again["conversation_id"] is not None  # the same conversation goes on
    expect(final_messages(page)).to_have_count(2)
    expect(final_messages(page).last).to_have_text("and that is the end of it.")
    expect(final_messages(page).last.get_by_role("note")).to_have_count(0)
    # the cut answer keeps saying why it ends early; only the latest answer may be continued
    expect(cut.get_by_role("note")).to_contain_text("The answer stopped at its length limit.")
    expect(page.get_by_role("button", name="Continue", exact=True)).to_have_count(0)
    # after a reload the stored message says the same (REST: the message's stop_reason)
    page.reload()
    expect(final_messages(page)).to_have_count(2)
    expect(final_messages(page).first.get_by_role("note")).to_contain_text("The answer stopped at its length limit.")
    expect(page.get_by_role("button", name="Continue", exact=True)).to_have_count(0)
    assert_clean(page)


def test_a_reloaded_answer_cut_at_the_step_limit_offers_continue(page: Page, server: FakeProtocolServer) -> None:
    cid = server.add_conversation("Steps", [
        {"role": "user", "content": "do many things"},
        {"role": "assistant", "content": "I did three of them", "stop_reason": "max_iterations"},
    ])
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    page.locator(".chat-conversation").filter(has_text="Steps").click()
    last = final_messages(page).last
    expect(last.get_by_role("note")).to_contain_text("The answer stopped at the limit of steps one answer may take.")
    last.get_by_role("button", name="Continue", exact=True).click()
    assert server.wait_for_frame("chat.send")[0]["conversation_id"] == cid
    assert_clean(page)
