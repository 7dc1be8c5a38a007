"""Browser tests of the tray against the scripted fake protocol server: reconnecting: resume without duplicates, retry after giving up, the same client_message_id, resync, gap refill.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


def test_reconnect_resumes_without_duplicates(page: Page, server: FakeProtocolServer) -> None:
    expected = "alpha beta gamma delta epsilon zeta eta theta iota kappa"

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(expected[:22], chunk=5)
        await run.gate("before_drop")
        await run.drop_connections()
        await run.stream_text(expected[22:], chunk=5)  # emitted while nobody listens
        await run.gate("resumed")
        run.complete(message=expected, message_html=f"<p>{expected}</p>")

    server.script = script
    server.resume_overlap = 3  # the server replays 3 events the tray already has
    open_tray(page, server)
    send(page, "stream a lot")
    stream = page.locator(".chat-bubble--streaming .chat-stream-body")
    expect(stream).to_have_text(expected[:22])
    seq_before = len(server.runs[next(iter(server.runs))].log)
    server.open_gate("before_drop")

    (resume,) = server.wait_for_frame("chat.resume")
    assert resume["after_seq"] == seq_before
    assert resume["run_id"] == next(iter(server.runs))
    expect(stream).to_have_text(expected)  # complete and not duplicated
    shot(page, "09_resumed_stream")
    server.open_gate("resumed")
    expect(final_messages(page)).to_have_text(expected)
    assert len(server.frames_of("chat.send")) == 1
    assert server.connections == 2
    assert_clean(page)


def test_retry_after_the_tray_gave_up_reconnecting_reads_the_answer_back_instead_of_sending_twice(page: Page, server: FakeProtocolServer) -> None:
    answer = "The answer begins and ends while nobody listens."

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(answer[:18])
        await run.gate("drop")
        await run.drop_connections()  # and the server stays unreachable (refuse_connections) for a while
        await run.stream_text(answer[18:])
        run.complete(message=answer, message_html=f"<p>{answer}</p>")

    server.script = script
    page.clock.install()  # the tray's reconnect backoff (about 45 s before it gives up) runs on a clock the test moves
    open_tray(page, server)
    send(page, "tell me")
    expect(page.locator(".chat-bubble--streaming .chat-stream-body")).to_have_text(answer[:18])
    server.refuse_connections = True
    server.open_gate("drop")
    alert = _until_the_tray_gives_up(page)
    expect(final_messages(page).last).to_contain_text(answer[:18])  # what arrived is kept meanwhile, marked
    server.refuse_connections = False
    alert.get_by_role("button", name="Retry").click()
    # the run had been acknowledged: the server has the message, and by now its whole answer
    expect(final_messages(page)).to_have_count(1)
    expect(final_messages(page).last.locator(".chat-bubble")).to_have_text(answer)
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    assert len(server.frames_of("chat.send")) == 1  # never sent twice
    _forget_refused_reconnects(page)
    assert_clean(page)


def test_retry_after_the_tray_gave_up_before_any_ack_sends_the_same_message_again(page: Page, server: FakeProtocolServer) -> None:
    page.clock.install()
    open_tray(page, server)
    server.drop_next_send = True  # the socket closes on the send, before the server acknowledges it ...
    server.refuse_connections = True  # ... and the server stays unreachable
    send(page, "hello?")
    alert = _until_the_tray_gives_up(page)
    expect(final_messages(page)).to_have_count(0)  # nothing arrived
    server.refuse_connections = False
    alert.get_by_role("button", name="Retry").click()
    expect(final_messages(page)).to_have_text("You said: hello?")
    first, second = server.frames_of("chat.send")
    assert first == second  # the same client_message_id: a server that had stored it would run it at most once
    assert len(server.runs) == 1
    expect(page.locator(".chat-bubble--user")).to_have_count(1)
    _forget_refused_reconnects(page)
    assert_clean(page)


def _until_the_tray_gives_up(page: Page) -> Any:
    """Move the tray's clock through its reconnect backoff (about 45 s) until it says the connection is lost."""
    alert = page.get_by_role("alert")
    for _ in range(60):
        if alert.filter(has_text="Lost the connection to the server.").count():
            break
        page.clock.run_for(2000)
        page.wait_for_timeout(50)  # each refused handshake fails in real time
    expect(alert).to_contain_text("Lost the connection to the server.")
    return alert


def _forget_refused_reconnects(page: Page) -> None:
    """The browser reports each refused handshake on the console: expected here, and nothing else may be there."""
    refused = [e for e in page.errors if "Unexpected response code: 503" in e]  # type: ignore[attr-defined]
    assert len(refused) >= 10
    page.errors[:] = [e for e in page.errors if e not in refused]  # type: ignore[attr-defined]


def test_send_retried_after_reconnect_reuses_client_message_id(page: Page, server: FakeProtocolServer) -> None:
    server.drop_next_send = True
    open_tray(page, server)
    send(page, "hello?")
    expect(final_messages(page)).to_have_text("You said: hello?")
    first, second = server.wait_for_frame("chat.send", 2)
    assert first["client_message_id"] == second["client_message_id"]
    assert first == second
    assert len(server.runs) == 1
    assert_clean(page)


def test_resync_reloads_conversation_over_rest(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("partial ")
        await run.gate("drop")
        await run.drop_connections()
        await run.stream_text("rest of it")
        run.complete(message="partial rest of it", message_html="<p>partial <em>rest of it</em></p>")

    server.script = script
    server.resync_on_resume = True
    open_tray(page, server)
    send(page, "resync me")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("partial")
    server.open_gate("drop")
    expect(final_messages(page).locator("em")).to_have_text("rest of it")
    expect(page.locator(".chat-bubble--user")).to_have_text("resync me")
    cid = next(iter(server.conversations))
    assert any(r["path"] == f"/api/conversations/{cid}/?limit=50" for r in server.http_requests)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert_clean(page)


@pytest.mark.parametrize("placeholder", [False, True], ids=["no-placeholder", "streaming-placeholder"])
def test_navigation_mid_run_resumes_from_start(page: Page, server: FakeProtocolServer, placeholder: bool) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text("first half, ")
        await run.gate("navigated")
        await run.stream_text("second half.")
        run.complete(message_html="<p>first half, second half.</p>")

    server.script = script
    server.streaming_placeholders = placeholder  # the real server stores a "streaming" reply at turn start
    open_tray(page, server)
    send(page, "long one")
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("first half,")
    page.goto(f"{server.http_url}/reports/")
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page.locator(".chat-bubble--user")).to_have_text("long one")
    (resume,) = server.wait_for_frame("chat.resume")
    assert resume["after_seq"] == 0
    expect(page.locator(".chat-bubble--streaming")).to_contain_text("first half,")
    expect(final_messages(page)).to_have_count(0)  # the placeholder is followed live, not rendered
    server.open_gate("navigated")
    expect(final_messages(page)).to_have_text("first half, second half.")
    assert_clean(page)


def test_lost_event_gap_is_refilled_by_resume(page: Page, server: FakeProtocolServer) -> None:
    text = "one two three four five six seven"

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(text, chunk=4)
        await run.gate("checked")
        run.complete(message=text, message_html=f"<p>{text}</p>")

    server.script = script
    server.lose_live_seqs = {4}
    open_tray(page, server)
    send(page, "gap")
    expect(page.locator(".chat-bubble--streaming .chat-stream-body")).to_have_text(text)
    (resume,) = server.wait_for_frame("chat.resume")
    assert resume["after_seq"] == 3
    server.open_gate("checked")
    expect(final_messages(page)).to_have_text(text)
    assert_clean(page)
