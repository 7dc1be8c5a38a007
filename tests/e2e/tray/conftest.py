"""The tray harness's fixtures: Debian's chromium through Playwright, the scripted fake protocol server (no Django
backend), and a page that records its errors and CSP violations (assert_clean in harness.py checks them)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from ..conftest import CSP_LISTENER
from ..fake_protocol_server import FakeProtocolServer

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def server() -> Iterator[FakeProtocolServer]:
    srv = FakeProtocolServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def page(browser: Browser, server: FakeProtocolServer) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" and "favicon" not in msg.text else None)
    pg.errors = errors  # type: ignore[attr-defined]
    # Record CSP violations (inline script/handlers) on every page load, navigations included.
    pg.add_init_script(CSP_LISTENER)
    yield pg
    context.close()
