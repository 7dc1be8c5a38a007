"""The admin's quality dashboard in Chromium: axe-core finds no serious or critical violation (light and dark), and
under the site's Content-Security-Policy nothing is refused (no script, no inline style: the charts are SVG coloured
by a stylesheet)."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from tests.bench.quality_dashboard import PASSWORD, STAFF

from .conftest import ROOT, LiveServer, screenshot

pytestmark = pytest.mark.e2e

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
RECORD_CSP = "window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"


@pytest.fixture(scope="module")
def quality_server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    """The demo site, with 400 turns over 90 days and a staff user who may view runs (tests.bench.quality_dashboard)."""
    server = start_live_server("admin_quality")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{server.db_path}", "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1"}
    subprocess.run([sys.executable, "-m", "tests.bench.quality_dashboard", "seed", "--turns", "400"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=300)
    return server


def _dashboard(browser: Browser, server: LiveServer, *, dark: bool = False, bypass_csp: bool = False) -> Page:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark" if dark else "light", bypass_csp=bypass_csp)
    page = context.new_page()
    page.add_init_script(RECORD_CSP)
    page.goto(f"{server.url}/admin/login/?next=/admin/pagechat/quality/")
    page.fill("#id_username", STAFF)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/pagechat/quality/")
    page.goto(f"{server.url}/admin/pagechat/quality/?period=90")
    page.locator("#pagechat-quality-turns svg").wait_for()
    return page


def _axe_serious(page: Page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    return list(page.evaluate("""async () => {
      const r = await axe.run(document.querySelector('#content'), {resultTypes: ['violations']});
      return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
    }"""))


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_axe_finds_nothing_serious_on_the_dashboard(chromium: Any, quality_server: LiveServer, dark: bool) -> None:
    assert AXE.exists(), "axe-core is installed by `make test` (npm ci)"
    page = _dashboard(chromium, quality_server, dark=dark, bypass_csp=True)  # axe is injected as a script
    assert page.locator(".pagechat-chart__svg").count() == 8
    page.locator("#pagechat-quality-turns summary").click()  # a chart's numbers, open
    assert page.locator("#pagechat-quality-turns table tbody tr").count() == 90
    screenshot(page, f"admin_quality_{'dark' if dark else 'light'}")
    assert _axe_serious(page) == []
    page.context.close()


def test_the_sites_csp_refuses_nothing_on_the_dashboard(chromium: Any, quality_server: LiveServer) -> None:
    page = _dashboard(chromium, quality_server)
    bars = page.locator("#pagechat-quality-turns rect")
    assert bars.count() > 0
    fill = bars.first.evaluate("el => getComputedStyle(el).fill")
    assert fill not in ("", "none", "rgb(0, 0, 0)")  # coloured by the stylesheet, which the CSP lets load
    assert page.evaluate("window.__csp") == []
    page.context.close()
