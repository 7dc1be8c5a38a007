"""Frontend tools and page state (issue 38, docs/tray.md "Frontend tools and page state") in real Chromium against a
live server with the offline model: the demo's tools (switch_tab, fill_field, highlight_section on a stream's settings
page, highlight on the reports list), docs/tray.md's example run from a classic script on a host page of the test
suite (tests/e2e/tools_host/), and the faults: a handler that throws, one that never answers (a short
CHAT_CLIENT_TOOL_TIMEOUT), leaving the page mid-call, a connection cut mid-call, and a second tab that must not run
the call. Each turn ends with exactly one terminal event and its answer in the conversation.

A server of its own (the host page's settings, a short tool timeout). Screenshots: artifacts/screenshots/tools_*.png.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from . import test_live_site
from .conftest import LiveServer, screenshot
from .test_live_site import WsProxy, assert_clean, final_messages, open_tray, send, stream_id, wait_for, wait_idle

open_page = test_live_site.open_page  # the fixture, shared with the live-site tests

pytestmark = pytest.mark.e2e

TIMEOUT_S = 4  # CHAT_CLIENT_TOOL_TIMEOUT of this module's server
TERMINAL = ("complete", "error", "cancelled")
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def tools_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    return start_live_server("tools", CHAT_OFFLINE_DELAY="0.005", CHAT_CLIENT_TOOL_TIMEOUT=str(TIMEOUT_S),
                             DJANGO_SETTINGS_MODULE="tests.e2e.tools_host.settings")


def shot(page: Page, name: str) -> None:
    screenshot(page, f"tools_{name}")


def proxied(open_page: Callable[..., Page], server: LiveServer, path: str) -> tuple[Page, WsProxy]:
    """A logged-in page at `path` whose websocket frames a WsProxy records (both ways)."""
    page = open_page(server, path, goto=False)
    proxy = WsProxy().attach(page)
    page.goto(server.url + path)
    expect(page.locator("#chat-tray .chat-launcher")).to_be_visible()
    return page, proxy


def answer(page: Page, text: str) -> Any:
    """Send `text` and return the answer's element once the turn is over."""
    before = final_messages(page).count()
    send(page, text)
    expect(final_messages(page)).to_have_count(before + 1, timeout=(TIMEOUT_S + 15) * 1000)
    wait_idle(page)
    return final_messages(page).last


def run_events(proxy: WsProxy, kind: str | None = None) -> list[dict[str, Any]]:
    """The events of the latest run the page received (`kind`: of one type)."""
    runs = [e["run_id"] for e in proxy.to_page if "seq" in e and e.get("run_id")]
    assert runs, proxy.to_page
    events = [e for e in proxy.to_page if e.get("run_id") == runs[-1] and "seq" in e]
    return [e for e in events if kind is None or e["type"] == kind]


def calls(proxy: WsProxy) -> list[dict[str, Any]]:
    """The client_tool_call events the page received so far."""
    return [e for e in proxy.to_page if e.get("type") == "client_tool_call"]


def one_terminal(proxy: WsProxy) -> dict[str, Any]:
    """The run's terminal event: there is exactly one, and it is `complete`."""
    terminal = [e for e in run_events(proxy) if e["type"] in TERMINAL]
    assert [e["type"] for e in terminal] == ["complete"], terminal
    return terminal[0]


def stored_turn(server: LiveServer, run_id: str) -> list[tuple[str, str, str]]:
    """(role, status, content) of the messages of the run's conversation, oldest first."""
    rows = server.query("SELECT conversation_id FROM pagechat_run WHERE id = ?", run_id.replace("-", ""))
    assert rows, run_id
    return server.query("SELECT role, status, content FROM pagechat_message WHERE conversation_id = ? ORDER BY id", rows[0][0])


def tool_history(terminal: dict[str, Any]) -> list[dict[str, Any]]:
    return terminal["payload"].get("tool_history") or []


# ---- the demo ----------------------------------------------------------------------------------------------------


def test_switch_tab_shows_the_tab_and_the_run_ends_once_with_its_card(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    sid = stream_id(tools_server, "Lung Cancer Immunotherapy Monitor")
    page, proxy = proxied(open_page, tools_server, f"/research-streams/{sid}/?tab=semantic")
    open_tray(page)
    reply = answer(page, "Switch tab to presentation")  # the tool named by its title
    # the page shows the tab without leaving (the tray and its conversation stay)
    expect(page.locator("#stream-form")).to_have_attribute("data-tab", "presentation")
    expect(page.locator("#tab-presentation")).to_have_attribute("aria-current", "page")
    expect(page).to_have_url(re.compile(r"\?tab=presentation$"))
    expect(page.locator("#field-categories")).to_be_visible()
    # what the tray sent: its id, its tools (people read titles), the page's state
    (frame,) = proxy.sent("chat.send")
    assert UUID4.match(frame["tab_id"])
    tools = {t["name"]: t for t in frame["client_tools"]}
    assert set(tools) == {"switch_tab", "fill_field", "highlight_section"}
    assert tools["switch_tab"]["title"] == "Switch tab"
    assert tools["switch_tab"]["parameters"]["properties"]["tab"]["enum"] == ["semantic", "retrieval", "presentation"]
    assert "purpose" in tools["fill_field"]["parameters"]["properties"]["field"]["enum"]
    assert frame["state"] == {"tab": "semantic"}
    # the call ran here once, its result went back, and the same run ended once with the tool's card
    (call,) = run_events(proxy, "client_tool_call")
    assert (call["tool"], call["input"], call["tab_id"]) == ("switch_tab", {"tab": "presentation"}, frame["tab_id"])
    (result,) = proxy.sent("chat.tool_result")
    assert result["tool_use_id"] == call["tool_use_id"] and result["is_error"] is False
    assert result["output"] == "Switched to the Presentation tab."
    assert result["state"] == {"tab": "presentation"}
    terminal = one_terminal(proxy)
    assert [(h["tool_name"], h["output"]) for h in tool_history(terminal)] == [("switch_tab", "Switched to the Presentation tab.")]
    expect(reply.locator(".chat-tool-card__name")).to_have_text(["Switch tab"])
    expect(reply).not_to_contain_text("switch_tab")
    assert page.evaluate("window.pagechat.getState()") == {"tab": "presentation"}
    shot(page, "switch_tab")
    # the next message says where the page is now
    answer(page, "Switch tab to retrieval")
    assert proxy.sent("chat.send")[1]["state"] == {"tab": "presentation"}
    expect(page.locator("#stream-form")).to_have_attribute("data-tab", "retrieval")
    # a state a tool of the server changed (applied as the tray applies a run's `state` event): the page shows its tab
    page.evaluate("import('/static/chat/tools.js').then((m) => m.applyState({tab: 'semantic'}, [{op: 'replace', path: '/tab', value: 'semantic'}]))")
    expect(page.locator("#stream-form")).to_have_attribute("data-tab", "semantic")
    assert page.evaluate("window.pagechat.getState()") == {"tab": "semantic"}
    assert_clean(page)


def test_switch_to_the_presentation_tab_in_plain_words(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    sid = stream_id(tools_server, "Lung Cancer Immunotherapy Monitor")
    page, proxy = proxied(open_page, tools_server, f"/research-streams/{sid}/?tab=semantic")
    open_tray(page)
    reply = answer(page, "Switch to the presentation tab")
    expect(page.locator("#stream-form")).to_have_attribute("data-tab", "presentation", timeout=2000)
    expect(reply.locator(".chat-tool-card__name")).to_have_text(["Switch tab"])
    one_terminal(proxy)


def test_fill_field_fills_one_field_as_a_proposal_does(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    sid = stream_id(tools_server, "Lung Cancer Immunotherapy Monitor")
    page, proxy = proxied(open_page, tools_server, f"/research-streams/{sid}/?tab=semantic")
    saved = tools_server.query("SELECT semantic FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0]
    open_tray(page)
    reply = answer(page, "Fill the scope field with adult patients only")
    scope = page.locator("#field-scope")
    expect(scope).to_have_class(re.compile(r"\bis-filled\b"))
    assert "adult patients" in scope.input_value()
    expect(page.locator("#page-notice")).to_have_text("Scope filled from the chat. Save to keep it.")
    (result,) = proxy.sent("chat.tool_result")
    assert result["is_error"] is False and result["output"].startswith("Filled Scope on the Semantic space tab")
    one_terminal(proxy)
    expect(reply.locator(".chat-tool-card__name")).to_have_text(["Fill a field"])
    # filled, not saved: the stream keeps its settings until the person saves the tab
    assert tools_server.query("SELECT semantic FROM pagechat_demo_researchstream WHERE id = ?", sid)[0][0] == saved
    shot(page, "fill_field")

    # a field of another tab: the tab is shown first (its own form is clean), then filled
    questions: list[str] = []
    page.once("dialog", lambda d: (questions.append(d.message), d.accept()))  # leaving the unsaved scope is asked about
    answer(page, "Fill the queries field with tumour microenvironment")
    expect(page.locator("#stream-form")).to_have_attribute("data-tab", "retrieval")
    expect(page.locator("#field-queries")).to_have_class(re.compile(r"\bis-filled\b"))
    assert "microenvironment" in page.locator("#field-queries").input_value()
    assert questions == ["This tab has unsaved changes. Leave without saving them?"]
    assert len(proxy.sent("chat.tool_result")) == 2
    assert_clean(page)


def test_highlight_section_and_a_report_of_the_list(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    sid = stream_id(tools_server, "Lung Cancer Immunotherapy Monitor")
    page, proxy = proxied(open_page, tools_server, f"/research-streams/{sid}/?tab=semantic")
    open_tray(page)
    reply = answer(page, "Highlight the topics section")
    expect(page.locator('[data-section="topics"]')).to_have_class(re.compile(r"\bis-highlighted\b"))
    expect(reply.locator(".chat-tool-card__name")).to_have_text(["Highlight a section"])
    one_terminal(proxy)
    shot(page, "highlight_section")

    page, proxy = proxied(open_page, tools_server, "/reports/")
    (title, report_id) = tools_server.query("SELECT title, id FROM pagechat_demo_report ORDER BY id LIMIT 1")[0]
    assert page.evaluate("window.pagechat.getState()") == {"reports": [{"id": report_id, "title": title}]}
    open_tray(page)
    reply = answer(page, "Highlight the weekly digest report")
    row = page.locator(f'#reports-table tr[data-report-id="{report_id}"]')
    expect(row).to_have_class(re.compile(r"\bis-highlighted\b"))
    (result,) = proxy.sent("chat.tool_result")
    assert result["output"] == f"Highlighted the report “{title}” (id {report_id})."
    expect(reply.locator(".chat-tool-card__name")).to_have_text(["Highlight a report"])
    one_terminal(proxy)
    shot(page, "highlight_report")
    assert_clean(page)


# ---- the host page: docs/tray.md's example from a classic script ------------------------------------------------


def test_the_docs_example_runs_from_a_classic_script(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    page, proxy = proxied(open_page, tools_server, "/tools-host/")
    assert page.evaluate("window.pagechat.getState()") == {"colour": "none"}
    page.evaluate("window.addEventListener('pagechat:state', e => (window.__stateEvents ||= []).push(e.detail))")
    open_tray(page)
    reply = answer(page, "Set colour to green")
    expect(page.locator("html")).to_have_attribute("data-colour", "green")
    (result,) = proxy.sent("chat.tool_result")
    assert (result["output"], result["is_error"], result["state"]) == ("The page's colour is green now.", False, {"colour": "green"})
    assert page.evaluate("window.pagechat.getState()") == {"colour": "green"}
    terminal = one_terminal(proxy)
    assert tool_history(terminal)[0]["tool_name"] == "set_colour"
    expect(reply.locator(".chat-tool-card__name")).to_have_text(["Set colour"])
    # the run's `state` event (the tool's new state) reached the page as documented
    (event,) = run_events(proxy, "state")
    assert event["state"] == {"colour": "green"}
    assert event["delta"] == [{"op": "replace", "path": "/colour", "value": "green"}]
    assert page.evaluate("window.__stateEvents") == [{"state": {"colour": "green"}, "delta": event["delta"]}]
    assert_clean(page)


def test_a_tool_that_requires_approval_runs_only_after_approve(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    page, proxy = proxied(open_page, tools_server, "/tools-host/")
    open_tray(page)
    send(page, "Paint wall")
    card = page.get_by_role("group", name="Approval needed: Paint wall")
    expect(card).to_be_visible()
    assert page.evaluate("window.__runs") == {}  # nothing runs before the person's answer
    card.get_by_role("button", name="Approve").click()
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    assert page.evaluate("window.__runs") == {"paint_wall": 1}
    (result,) = proxy.sent("chat.tool_result")
    assert result["output"] == "The wall is painted."
    one_terminal(proxy)
    # Deny: the model is told, nothing runs, the run still ends once
    send(page, "Paint wall")
    page.get_by_role("group", name="Approval needed: Paint wall").last.get_by_role("button", name="Deny").click()
    expect(final_messages(page)).to_have_count(2)
    wait_idle(page)
    expect(final_messages(page).last).to_contain_text("did not approve")
    assert page.evaluate("window.__runs") == {"paint_wall": 1}
    assert len(proxy.sent("chat.tool_result")) == 1
    one_terminal(proxy)
    assert_clean(page)


# ---- faults: each ends with one terminal event and its answer ----------------------------------------------------


def test_a_handler_that_throws_is_a_tool_error_the_model_reads(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    page, proxy = proxied(open_page, tools_server, "/tools-host/")
    open_tray(page)
    reply = answer(page, "Break wheel")
    (result,) = proxy.sent("chat.tool_result")
    assert (result["is_error"], result["output"]) == (True, "the handler failed: the colour wheel is stuck")
    terminal = one_terminal(proxy)
    assert "the colour wheel is stuck" in tool_history(terminal)[0]["output"]
    expect(reply).to_contain_text("the colour wheel is stuck")
    assert page.evaluate("window.__runs") == {"break_wheel": 1}
    run_id = terminal["run_id"]
    stored = stored_turn(tools_server, run_id)
    assert [(role, status) for role, status, _ in stored] == [("user", "complete"), ("assistant", "complete")]
    assert "the colour wheel is stuck" in stored[-1][2]
    assert_clean(page)


def test_a_handler_that_never_answers_times_out(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    page, proxy = proxied(open_page, tools_server, "/tools-host/")
    open_tray(page)
    reply = answer(page, "Wait forever")
    assert proxy.sent("chat.tool_result") == []
    terminal = one_terminal(proxy)
    assert f"did not answer within {TIMEOUT_S} seconds" in tool_history(terminal)[0]["output"]
    expect(reply).to_contain_text("did not answer")
    assert page.evaluate("window.__runs") == {"wait_forever": 1}
    # the page stays usable: the next turn runs
    answer(page, "Set colour to blue")
    expect(page.locator("html")).to_have_attribute("data-colour", "blue")
    assert_clean(page)


def test_leaving_the_page_mid_call_ends_the_call_and_the_run_once(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    page, proxy = proxied(open_page, tools_server, "/tools-host/")
    page.evaluate("window.__slowMs = 60000")
    open_tray(page)
    send(page, "Count sheep")
    wait_for(page, lambda: calls(proxy), "the call to reach the page")
    run_id = run_events(proxy, "client_tool_call")[0]["run_id"]
    page.goto(tools_server.url + "/reports/")  # a navigation: pagehide while the handler runs
    expect(page.locator(".chat-tray")).to_be_visible()  # the tray reopens on the next page and follows the run
    expect(final_messages(page).last).to_contain_text("page was left", timeout=(TIMEOUT_S + 15) * 1000)
    wait_idle(page)
    results = proxy.sent("chat.tool_result")
    assert len(results) <= 1  # best effort: the server also ends the calls of a socket that closes
    if results:
        assert (results[0]["is_error"], results[0]["output"]) == (True, "the page was left before the tool finished")
    # the run ended once: the next page read it from the conversation (it had ended) or followed it to its end
    terminal = [e for e in proxy.to_page if e.get("run_id") == run_id and e.get("type") in TERMINAL]
    assert [e["type"] for e in terminal] in ([], ["complete"]), terminal
    stored = stored_turn(tools_server, run_id)
    assert [(role, status) for role, status, _ in stored] == [("user", "complete"), ("assistant", "complete")]
    assert "page was left" in stored[-1][2]
    (status,) = tools_server.query("SELECT status FROM pagechat_run WHERE id = ?", run_id.replace("-", ""))[0]
    assert status == "completed"
    expect(final_messages(page)).to_have_count(1)
    assert page.evaluate("window.__runs") is None  # the reports page has no such tools: nothing ran there
    assert_clean(page)


def test_a_cut_connection_mid_call_ends_once_and_the_late_answer_is_refused_quietly(
    open_page: Callable[..., Page], tools_server: LiveServer
) -> None:
    page, proxy = proxied(open_page, tools_server, "/tools-host/")
    page.evaluate("window.__slowMs = 1500")
    open_tray(page)
    send(page, "Count sheep")
    wait_for(page, lambda: calls(proxy), "the call to reach the page")
    run_id = run_events(proxy, "client_tool_call")[0]["run_id"]
    proxy.cut()  # the server ends the calls of a socket that closes; the tray resumes the run
    expect(final_messages(page)).to_have_count(1, timeout=(TIMEOUT_S + 15) * 1000)
    wait_idle(page)
    terminal = [e for e in proxy.to_page if e.get("run_id") == run_id and e.get("type") in TERMINAL]
    assert [e["type"] for e in terminal] == ["complete"], terminal
    assert page.evaluate("window.__runs") == {"count_sheep": 1}  # the resumed run's replay did not run it again
    assert len(proxy.sent("chat.tool_result")) <= 1
    expect(page.locator(".chat-error")).to_have_count(0)
    assert_clean(page)


def test_a_second_tab_shows_the_card_and_runs_nothing(open_page: Callable[..., Page], tools_server: LiveServer) -> None:
    first, proxy = proxied(open_page, tools_server, "/tools-host/")
    first.evaluate("window.__hold = true")  # the call waits until the second tab has seen it
    open_tray(first)
    send(first, "Count sheep")
    wait_for(first, lambda: calls(proxy), "the call to reach the first tab")
    conversation = first.evaluate("JSON.parse(sessionStorage.getItem('chat-tray:v1') || '{}').conversationId")
    # the same person's second tab opens the conversation while the call runs: it follows the run from its start
    second, second_proxy = proxied(open_page, tools_server, "/tools-host/")
    open_tray(second)
    second.evaluate(f"window.pagechat.getTray().loadConversation({int(conversation)})")
    wait_for(second, lambda: any(e.get("type") == "client_tool_call" for e in second_proxy.to_page), "the second tab to see the call")
    first.evaluate("window.__release()")
    expect(final_messages(first)).to_have_count(1, timeout=(TIMEOUT_S + 15) * 1000)
    expect(final_messages(second).last).to_contain_text("Counted 42 sheep")
    wait_idle(second)
    assert [e["tool_use_id"] for e in run_events(second_proxy, "client_tool_call")] == [
        e["tool_use_id"] for e in run_events(proxy, "client_tool_call")
    ]  # the second tab saw the call ...
    assert second.evaluate("window.__runs") == {}  # ... and did not run it
    assert second_proxy.sent("chat.tool_result") == []
    assert first.evaluate("window.__runs") == {"count_sheep": 1}
    (result,) = proxy.sent("chat.tool_result")
    assert (result["output"], result["is_error"]) == ("Counted 42 sheep.", False)
    one_terminal(proxy)
    one_terminal(second_proxy)
    assert_clean(first)
    assert_clean(second)
