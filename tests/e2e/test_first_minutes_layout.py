"""Issue 37, item 2: no layout shift from the tray. With the tray open, every navigation paints the page already docked
(cumulative layout shift at most 0.02 per load, measured by a layout-shift PerformanceObserver installed before the
page's first byte), on every demo page, on a desktop and a phone; the demo's header stays one row at 1280 px with the
tray open. Real Chromium against the live demo (tests/e2e/conftest.py)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import LiveServer, screenshot, watched_page
from .test_live_site import assert_clean, login, open_tray, stream_id

pytestmark = pytest.mark.e2e

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
MAX_CLS = 0.02

# Installed with add_init_script: runs in every document before its own scripts, so `buffered: true` sees every shift
# of the load, the ones before the first paint included. Input-driven shifts (hadRecentInput) do not count, as in CLS.
CLS_OBSERVER = """
window.__cls = 0;
window.__shifts = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.hadRecentInput) continue;
    window.__cls += entry.value;
    window.__shifts.push({
      value: Math.round(entry.value * 10000) / 10000,
      at: Math.round(entry.startTime),
      moved: (entry.sources || []).map((s) => s.node ? (s.node.id || s.node.className || s.node.nodeName) : "?").slice(0, 4),
    });
  }
}).observe({ type: "layout-shift", buffered: true });
"""

# Settled: the tray has started (its panel shows), the load event has fired and two frames were painted after it.
SETTLED = """async () => {
  await new Promise((done) => (document.readyState === "complete" ? done() : addEventListener("load", done, { once: true })));
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  await new Promise((done) => setTimeout(done, 300));
}"""


def demo_paths(server: LiveServer) -> list[str]:
    """Every page of the demo (pages/demo/urls.py), each tab of the stream editor included."""
    sid = stream_id(server, "Lung Cancer Immunotherapy Monitor")
    report = server.query("SELECT id FROM pagechat_demo_report ORDER BY id LIMIT 1")[0][0]
    article = server.query("SELECT external_id FROM pagechat_demo_article ORDER BY id LIMIT 1")[0][0]
    return ["/", "/research-streams/", "/research-streams/new/", f"/research-streams/{sid}/", f"/research-streams/{sid}/?tab=semantic",
            f"/research-streams/{sid}/?tab=retrieval", "/reports/", f"/reports/{report}/", f"/articles/{article}/"]


@pytest.fixture
def new_page(chromium: Browser) -> Iterator[Any]:
    contexts = []

    def make(server: LiveServer, viewport: dict[str, int]) -> Page:
        context = chromium.new_context(viewport=viewport, storage_state=login(chromium, server))
        contexts.append(context)
        page = watched_page(context)
        page.add_init_script(CLS_OBSERVER)
        return page

    yield make
    for context in contexts:
        context.close()


def load_shift(page: Page, url: str) -> tuple[float, list[dict[str, Any]]]:
    """Navigate to `url` (the tray open from the page before) and return the load's layout shift and its entries."""
    page.goto(url)
    expect(page.locator(".chat-tray")).to_be_visible()
    page.evaluate(SETTLED)
    return float(page.evaluate("window.__cls")), list(page.evaluate("window.__shifts"))


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_navigation_with_the_tray_open_paints_the_page_already_docked(new_page: Any, site_server: LiveServer,
                                                                        viewport: dict[str, int]) -> None:
    page = new_page(site_server, viewport)
    page.goto(site_server.url + "/")
    open_tray(page)
    found = {}
    for path in demo_paths(site_server):
        cls, shifts = load_shift(page, site_server.url + path)
        found[path] = (round(cls, 4), shifts)
    over = {path: v for path, v in found.items() if v[0] > MAX_CLS}
    assert over == {}, over
    # the tray closed, the same pages shift no more either (and the page takes the whole width again)
    page.get_by_role("button", name="Close chat").click()
    cls, shifts = load_shift_closed(page, site_server.url + "/reports/")
    assert cls <= MAX_CLS, shifts
    assert_clean(page)


def load_shift_closed(page: Page, url: str) -> tuple[float, list[dict[str, Any]]]:
    page.goto(url)
    expect(page.locator(".chat-launcher")).to_be_visible()
    page.evaluate(SETTLED)
    return float(page.evaluate("window.__cls")), list(page.evaluate("window.__shifts"))


def test_the_header_stays_one_row_at_1280_with_the_tray_open(new_page: Any, site_server: LiveServer) -> None:
    page = new_page(site_server, DESKTOP)
    page.goto(site_server.url + "/reports/")
    open_tray(page)
    for path in ["/", "/reports/"]:
        page.goto(site_server.url + path)
        expect(page.locator(".chat-tray")).to_be_visible()
        page.evaluate(SETTLED)
        items = page.locator(".site-header__inner > *").evaluate_all(
            "els => els.map((el) => { const r = el.getBoundingClientRect(); return {cls: el.className, top: r.top, bottom: r.bottom}; })")
        assert len(items) >= 4, items  # the brand, the navigation, the signed-in user, the language switch
        first = items[0]
        for item in items:  # one row: every item lies across the brand's vertical middle
            assert item["top"] < (first["top"] + first["bottom"]) / 2 < item["bottom"], items
        shell = page.locator(".shell").bounding_box()
        tray = page.locator(".chat-tray").bounding_box()
        assert shell is not None and tray is not None
        assert shell["x"] + shell["width"] <= tray["x"] + 1, (shell, tray)  # docked beside the tray, not under it
    screenshot(page, "first_minutes_header_docked")
    assert_clean(page)
