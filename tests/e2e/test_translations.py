"""The demo and the tray in the browser's language (German here), the language switcher, and a right-to-left page:
real chromium against the live demo with the offline model. Screenshots: artifacts/screenshots/i18n_*.png."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import LiveServer, screenshot, tray_page
from .test_live_site import WIDE, assert_clean, final_messages, login, wait_idle

pytestmark = pytest.mark.e2e

# The tray's skeleton: every element's tag and classes, without text (the structure must not depend on the language)
SKELETON = "[...document.querySelectorAll('#chat-tray *')].map(el => el.tagName + '.' + [...el.classList].sort().join('.'))"


@pytest.fixture
def open_page(chromium: Browser, site_server: LiveServer) -> Iterator[Callable[..., Page]]:
    """open_page(path, locale) -> a signed-in page whose browser asks for `locale` (Accept-Language)."""
    contexts = []

    def make(path: str = "/", locale: str = "en-US", init_script: str | None = None) -> Page:
        context = chromium.new_context(viewport=WIDE, locale=locale, storage_state=login(chromium, site_server))
        contexts.append(context)
        return tray_page(context, site_server.url + path, init_script=init_script)

    yield make
    for context in contexts:
        context.close()


def shot(page: Page, name: str) -> None:
    screenshot(page, f"i18n_{name}")


def skeleton(page: Page) -> list[str]:
    return list(page.evaluate(SKELETON))


def test_the_demo_and_the_tray_speak_german(open_page: Callable[..., Page]) -> None:
    english = open_page("/")
    english.get_by_role("button", name="Open chat").click()
    expect(english.get_by_label("Message")).to_be_focused()
    english_skeleton = skeleton(english)

    page = open_page("/", locale="de-DE")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("html")).to_have_attribute("dir", "ltr")
    expect(page.get_by_role("navigation").get_by_role("link", name="Ströme")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_have_text("Willkommen zurück, demo.")
    expect(page.get_by_label("Sprache")).to_have_value("de")
    shot(page, "de_home")

    # the English page's contract names are translated too: found by their stable attributes, named in German
    launcher = page.locator("[data-pagechat-launcher]")
    expect(launcher).to_have_text("Chat")
    expect(launcher).to_have_accessible_name("Chat öffnen")
    launcher.click()
    expect(page.locator("#chat-tray")).to_have_attribute("lang", "de")
    box = page.locator("[data-pagechat-input]")
    expect(box).to_have_accessible_name("Nachricht")
    expect(box).to_be_focused()
    expect(box).to_have_attribute("placeholder", "Fragen Sie etwas …")
    expect(page.locator(".chat-welcome__title")).to_have_text("Hallo demo! Wie kann ich helfen?")
    expect(page.get_by_role("button", name="Senden", exact=True)).to_have_attribute("data-pagechat-send", "")
    expect(page.get_by_role("button", name="Neuer Chat")).to_be_visible()
    expect(page.locator(".chat-badge")).to_have_text("Offline-Modell")
    assert skeleton(page) == english_skeleton  # the same tray, only its words differ

    # the model is told the language: the offline model answers in German (its own phrases are translated)
    before = final_messages(page).count()
    box.fill("hello")
    box.press("Enter")
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    reply = final_messages(page).last
    expect(reply).to_contain_text("Hallo! Ich bin das Offline-Modell")
    expect(reply.get_by_role("group", name="Aktionen zur Antwort").get_by_role("button", name="Neu erzeugen")).to_be_visible()
    chips = page.get_by_role("group", name="Vorgeschlagene Antworten").get_by_role("button")
    expect(chips.first).to_be_visible()
    shot(page, "de_tray")

    # dates in the user's locale: the conversation list shows German dates (day.month.year)
    page.get_by_role("button", name="Verlauf").click()
    meta = page.locator(".chat-conversation-list li").first
    expect(meta).to_contain_text(re.compile(r"\b\d{1,2}\.\d{1,2}\.\d{4}\b"))
    shot(page, "de_history")
    assert_clean(page)
    assert_clean(english)


def test_the_demos_payload_cards_speak_german(open_page: Callable[..., Page]) -> None:
    """The demo's renderers translate their titles and labels through the same catalog (loaded before any module)."""
    page = open_page("/research-streams/", locale="de-DE")
    expect(page.get_by_role("heading", level=1)).to_have_text("Forschungsströme")
    page.locator("[data-pagechat-launcher]").click()
    box = page.locator("[data-pagechat-input]")
    box.fill("suggest stream ideas about immunology")
    box.press("Enter")
    wait_idle(page)
    card = page.locator(".chat-panel")
    expect(card.locator(".chat-panel__title")).to_have_text("Ideen für Ströme")
    expect(card.get_by_role("button", name="Bereich schließen")).to_be_visible()
    expect(final_messages(page).last.get_by_role("button", name="Ideen für Ströme ansehen", exact=True)).to_be_visible()
    shot(page, "de_payload_card")
    assert_clean(page)


def test_the_language_switcher_changes_the_page_and_the_tray(open_page: Callable[..., Page]) -> None:
    page = open_page("/research-streams/")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.get_by_label("Language").select_option("fr")
    page.get_by_role("button", name="Switch").click()
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page).to_have_url(re.compile(r"/research-streams/$"))  # back on the same page
    page.locator("[data-pagechat-launcher]").click()
    expect(page.locator("[data-pagechat-send]")).to_have_text("Envoyer")
    config: Any = page.evaluate("JSON.parse(document.getElementById('chat-tray-config').textContent)")
    assert config["language"] == "fr" and config["i18n_url"].endswith("?lang=fr")
    # and back: the choice is kept in a cookie, so English must be chosen again
    page.get_by_label("Langue").select_option("en")
    page.get_by_role("button", name="Changer").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert_clean(page)


RTL = "document.addEventListener('DOMContentLoaded', () => { document.documentElement.dir = 'rtl'; })"


def test_a_right_to_left_page_gets_a_mirrored_tray(open_page: Callable[..., Page]) -> None:
    ltr = open_page("/reports/")
    width = WIDE["width"]
    ltr_launcher = ltr.locator(".chat-launcher").bounding_box()
    assert ltr_launcher and ltr_launcher["x"] > width / 2  # bottom right

    page = open_page("/reports/", locale="de-DE", init_script=RTL)
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    launcher = page.locator(".chat-launcher").bounding_box()
    assert launcher and launcher["x"] + launcher["width"] < width / 2  # bottom left: the mirror image
    assert abs(launcher["x"] - (width - ltr_launcher["x"] - ltr_launcher["width"])) < 2
    page.locator("[data-pagechat-launcher]").click()
    tray = page.locator(".chat-tray").bounding_box()
    assert tray and tray["x"] == 0  # the sheet opens from the left edge
    box = page.locator("[data-pagechat-input]")
    box.fill("hello")
    box.press("Enter")
    wait_idle(page)
    user = page.locator(".chat-bubble--user").last.bounding_box()
    answer = final_messages(page).last.locator(".chat-bubble").first.bounding_box()
    # mirrored: the user's own bubble sits at the end (now the left), the answer at the start (the right)
    assert user and answer and user["x"] + user["width"] < answer["x"] + answer["width"] - 50
    shot(page, "rtl_tray")
    assert_clean(page)
