"""Browser tests of the tray against the scripted fake protocol server: the conversation list: load, new, delete, search, show more, grouping; a long conversation read a part at a time.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer
from .harness import assert_clean, final_messages, open_tray, row_action, send, shot

pytestmark = pytest.mark.e2e


def test_conversation_list_load_new_and_delete(page: Page, server: FakeProtocolServer) -> None:
    older = server.add_conversation("Older chat", [{"role": "user", "content": "old question"}, {"role": "assistant", "content": "old answer", "message_html": "<p>old answer</p>"}])
    newer = server.add_conversation("Tool chat", [
        {"role": "user", "content": "search it"},
        {"role": "assistant", "content": "Result [[tool:0]]", "message_html": '<p>Result</p><div class="tool-slot" data-tool-index="0"></div>',
         "tool_history": [{"tool_name": "search_articles", "input": {"q": "x"}, "output": "3 hits"}],
         "suggested_values": [{"label": "More", "value": "more"}]},
    ])
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    items = page.locator(".chat-conversation")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("Tool chat")
    shot(page, "13_conversation_list")
    items.first.click()
    expect(page.locator(".chat-bubble--user")).to_have_text("search it")
    expect(final_messages(page).get_by_role("button", name="search_articles")).to_be_visible()
    expect(page.get_by_role("button", name="More")).to_be_visible()  # chips of the latest message
    send(page, "follow up")
    expect(final_messages(page).last).to_have_text("You said: follow up")
    assert server.frames_of("chat.send")[-1]["conversation_id"] == newer

    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".chat-welcome")).to_be_visible()

    page.get_by_role("button", name="History").click()
    delete = row_action(page, "Older chat", "Delete conversation: Older chat")
    delete.click()
    expect(delete).to_have_text("Confirm delete")
    delete.click()
    expect(page.locator(".chat-conversation")).to_have_count(1)
    assert older not in server.conversations
    (req,) = [r for r in server.http_requests if r["method"] == "DELETE"]
    assert req["headers"].get("X-CSRFToken") == "test-csrf-token"
    assert_clean(page)


def test_a_long_conversation_opens_at_its_latest_messages_and_reads_back_on_request(page: Page, server: FakeProtocolServer) -> None:
    """A conversation of 120 messages opens with its latest 50; "Show earlier messages" puts the 50 before them above,
    where the reader was stays in view, and the last part leaves no button; the latest answer keeps its actions."""
    said: list[dict[str, Any]] = []
    for i in range(60):
        said += [{"role": "user", "content": f"question {i}"},
                 {"role": "assistant", "content": f"answer {i}", "message_html": f"<p>answer {i}</p>"}]
    server.add_conversation("Long chat", said)
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    page.locator(".chat-conversation").first.click()
    bubbles = page.locator(".chat-bubble--user")
    expect(final_messages(page).last).to_have_text("answer 59")
    expect(bubbles).to_have_count(25)
    expect(bubbles.first).to_have_text("question 35")
    assert server.detail_queries[-1] == {"limit": "50"}
    earlier = page.get_by_role("button", name="Show earlier messages")
    expect(earlier).to_be_visible()
    shot(page, "long_conversation_latest")

    log = page.get_by_role("log", name="Conversation")
    earlier.click()
    expect(bubbles).to_have_count(50)
    expect(bubbles.first).to_have_text("question 10")
    first_id = server.conversations[max(server.conversations)]["messages"][70]["id"]  # "question 35"
    assert server.detail_queries[-1] == {"limit": "50", "before": str(first_id)}
    # the reader's place is kept: the message that was at the top is still in view, not pushed down out of it
    top = page.locator(".chat-bubble--user", has_text="question 35")
    expect(top).to_be_in_viewport()
    earlier.click()
    expect(bubbles).to_have_count(60)
    expect(bubbles.first).to_have_text("question 0")
    expect(earlier).to_be_hidden()
    expect(log).to_be_focused()  # the button that had focus is gone
    # the latest answer still has the latest answer's actions; none of the older ones got them
    expect(page.locator(".chat-regenerate:visible")).to_have_count(1)
    expect(final_messages(page).last.locator(".chat-regenerate")).to_be_visible()
    send(page, "one more")
    expect(final_messages(page).last).to_have_text("You said: one more")
    assert_clean(page)


def test_conversation_list_searches_and_shows_more(page: Page, server: FakeProtocolServer) -> None:
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    expect(page.locator(".chat-conversations__results")).to_have_text("No conversations yet.")  # and nothing else
    titled = server.add_conversation("Gene editing notes", [{"role": "user", "content": "hello"}])
    said = server.add_conversation("Untitled", [{"role": "user", "content": "what about GENE drives?"}])
    for i in range(50):  # 52 in all: more than one page of 50
        server.add_conversation(f"Chat {i}", [{"role": "user", "content": "small talk"}])
    page.get_by_role("button", name="History").click()  # closes the list
    page.get_by_role("button", name="History").click()
    items = page.locator(".chat-conversation")
    expect(items).to_have_count(50)
    expect(page.get_by_role("button", name="Delete all conversations")).to_be_visible()
    page.get_by_role("button", name="Show more").click()
    expect(items).to_have_count(52)
    expect(page.get_by_role("button", name="Show more")).to_have_count(0)
    assert server.list_queries[-2:] == [{"limit": "50"}, {"limit": "50", "offset": "50"}]

    search = page.get_by_role("searchbox", name="Search conversations")
    search.fill("nothing like it")
    expect(page.get_by_role("status").filter(has_text="No conversations match “nothing like it”.")).to_be_visible()
    expect(page.locator(".chat-conversations__results")).to_have_text("No conversations match “nothing like it”.")  # nothing else
    search.fill("gene")
    expect(items).to_have_count(2)  # a title and a message, newest first
    assert [items.nth(i).get_attribute("data-conversation-id") for i in range(2)] == [str(said), str(titled)]
    expect(page.get_by_role("button", name="Delete all conversations")).to_have_count(0)  # not over a filtered list
    assert server.list_queries[-1] == {"q": "gene", "limit": "50"}
    expect(page.locator(".chat-conversations__results")).not_to_contain_text("null")
    shot(page, "13b_conversation_search")
    items.nth(1).click()  # a found conversation opens as one from the whole list does
    expect(page.locator(".chat-bubble--user")).to_have_text("hello")
    assert_clean(page)


def test_show_more_after_a_delete_skips_no_conversation(page: Page, server: FakeProtocolServer) -> None:
    oldest = [server.add_conversation(f"Old {i}", [{"role": "user", "content": "hi"}]) for i in range(2)]
    for i in range(50):
        server.add_conversation(f"Chat {i}", [{"role": "user", "content": "small talk"}])
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    items = page.locator(".chat-conversation")
    expect(items).to_have_count(50)
    delete = row_action(page, "Chat 10", "Delete conversation: Chat 10")
    delete.click()
    delete.click()
    expect(items).to_have_count(49)
    page.get_by_role("button", name="Show more").click()
    expect(items).to_have_count(51)  # both older ones: the list moved up by one, and so did the next page
    assert server.list_queries[-1] == {"limit": "50", "offset": "49"}
    listed = [items.nth(i).get_attribute("data-conversation-id") for i in range(51)]
    assert listed[-2:] == [str(oldest[1]), str(oldest[0])]
    assert_clean(page)


def test_conversation_list_is_grouped_by_day_and_pinned_ones_come_first(page: Page, server: FakeProtocolServer) -> None:
    now = datetime.now(UTC)

    def ago(days: int) -> str:
        return (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")

    long_ago = now - timedelta(days=100)
    ids = {title: server.add_conversation(title, [{"role": "user", "content": "hello"}], updated_at=ago(days))
           for title, days in [("Old chat", 100), ("Last month", 20), ("This week", 3), ("Yesterday's", 1), ("Today's", 0)]}
    by_day = ["Today", "Yesterday", "Previous 7 days", "Previous 30 days", long_ago.strftime("%B %Y")]
    headings = page.locator(".chat-conversation-group__title")
    open_tray(page, server)
    page.get_by_role("button", name="History").click()
    expect(headings).to_have_text(by_day)
    for heading, title in zip(by_day, ["Today's", "Yesterday's", "This week", "Last month", "Old chat"], strict=True):
        expect(page.get_by_role("list", name=heading).locator(".chat-conversation__title")).to_have_text(title)  # labelled by its heading

    row_action(page, "Old chat", "Pin conversation: Old chat").click()
    expect(headings).to_have_text(["Pinned", *by_day[:4]])  # its month had nothing else
    expect(page.get_by_role("list", name="Pinned").locator(".chat-conversation__title")).to_have_text("Old chat")
    expect(page.get_by_role("button", name="Actions for conversation: Old chat")).to_be_focused()
    assert "pinned_at" in server.conversations[ids["Old chat"]]
    row_action(page, "This week", "Pin conversation: This week").click()
    expect(page.get_by_role("list", name="Pinned").locator(".chat-conversation__title")).to_have_text(["This week", "Old chat"])  # latest pinned first
    shot(page, "13c_conversation_groups")

    row_action(page, "Old chat", "Unpin conversation: Old chat").click()
    expect(headings).to_have_text(["Pinned", *by_day[:2], by_day[3], by_day[4]])  # back under its month
    expect(page.get_by_role("button", name="Actions for conversation: Old chat")).to_be_focused()
    expect(row_action(page, "Old chat", "Pin conversation: Old chat")).to_be_visible()  # its menu offers Pin again
    page.keyboard.press("Escape")
    assert "pinned_at" not in server.conversations[ids["Old chat"]]
    delete = row_action(page, "Yesterday's", "Delete conversation: Yesterday's")
    delete.click()
    delete.click()
    expect(headings).to_have_text(["Pinned", by_day[0], by_day[3], by_day[4]])  # no heading over nothing
    assert_clean(page)
