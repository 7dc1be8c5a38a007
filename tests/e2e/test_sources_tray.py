"""Citations in a real browser (issue 40): on the demo's reports page the offline model answers "what do the articles
say about CRISPR delivery?" citing what its search found; the tray shows the references as numbered links to the
articles and a Sources list under the answer, and both again after a reload (the answer then comes from REST)."""
from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Locator, Page, expect

from . import test_live_site
from .conftest import LiveServer
from .test_live_site import ask, assert_clean, final_messages, open_tray, shot

open_page = test_live_site.open_page  # the fixture, shared with the live-site tests

pytestmark = pytest.mark.e2e

ARTICLE = re.compile(r"/articles/\d+/")


def assert_cites_articles(reply: Locator) -> list[str]:
    """The answer's numbered references link to article pages, and its Sources list names them; returns the links."""
    cites = reply.locator("a.chat-cite")
    expect(cites.first).to_be_visible()
    expect(cites.first).to_have_text("[1]")
    hrefs = [cites.nth(i).get_attribute("href") or "" for i in range(cites.count())]
    assert hrefs and all(ARTICLE.fullmatch(h) for h in hrefs), hrefs
    sources = reply.get_by_role("note", name="Sources")
    expect(sources).to_be_visible()
    expect(sources.locator(".chat-sources__label")).to_have_text("Sources")
    titles = sources.locator("a.chat-sources__title")
    assert titles.count() >= cites.count()
    listed = [titles.nth(i).get_attribute("href") or "" for i in range(titles.count())]
    assert all(ARTICLE.fullmatch(h) for h in listed) and set(hrefs) <= set(listed), (hrefs, listed)
    assert "[[source:" not in reply.inner_text()
    return hrefs


def test_reports_answer_cites_articles_as_links_and_lists_them_after_a_reload_too(
    open_page: Callable[..., Page], site_server: LiveServer,
) -> None:
    page = open_page(site_server, "/reports/")
    open_tray(page)
    reply = ask(page, "What do the articles say about CRISPR delivery?")
    hrefs = assert_cites_articles(reply)
    shot(page, "sources_cited")
    page.reload()
    expect(page.locator(".chat-tray")).to_be_visible()  # the tray stays open; the answer is read back from REST
    assert assert_cites_articles(final_messages(page).last) == hrefs
    final_messages(page).last.locator("a.chat-cite").first.click()  # a reference opens the article, on this site
    expect(page).to_have_url(re.compile(re.escape(site_server.url) + ARTICLE.pattern + "$"))
    assert_clean(page)
