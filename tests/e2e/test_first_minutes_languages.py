"""Issue 37, item 9 in real Chromium on the demo: under a German, Spanish or French browser (context locale and
Accept-Language) every label of the tray is in that language - the launcher, the message box and the send button
included, found by their stable attributes - and a request written in that language gets its answer, chips, buttons
and the payload card's enumerated values in it. Screenshots: artifacts/screenshots/first_minutes_lang_*.png."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.catalogs import entries

from .conftest import LiveServer, screenshot, tray_page
from .test_live_site import WIDE, assert_clean, demo_id, final_messages, login, wait_idle

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]

# What each language names the three elements the English page names "Open chat", "Message" and "Send", a request to
# create a stream there, and what the answer shows: chips, its primary button, the card's frequency.
EXPECTED: dict[str, dict[str, Any]] = {
    "de": {"expression": "Ausdruck", "abilities": "Was kannst du?", "clock": "Aktuelle Uhrzeit", "area": "Onkologie",
           "what": "Worum geht es hier?", "days": "Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonntag",
           "calculate": "Berechne 17*23+4", "locale": "de-DE", "launcher": "Chat öffnen", "input": "Nachricht", "send": "Senden",
           "ask": "Erstelle einen Forschungsstrom über Onkologie", "chips": ["Namen ändern", "Weitere Kanäle hinzufügen", "Andere Häufigkeit"],
           "accept": "Annehmen & Strom anlegen", "weekly": "Wöchentlich", "scientific": "Wissenschaftlich"},
    "es": {"expression": "Expresión", "abilities": "¿Qué puedes hacer?", "clock": "Hora actual", "area": "Oncología",
           "what": "¿De qué trata esto?", "days": "lunes martes miércoles jueves viernes sábado domingo",
           "calculate": "Calcula 17*23+4", "locale": "es-ES", "launcher": "Abrir chat", "input": "Mensaje", "send": "Enviar",
           "ask": "Crea un flujo de investigación sobre oncología", "chips": ["Cambiar el nombre", "Añadir más canales", "Otra frecuencia"],
           "accept": "Aceptar y crear flujo", "weekly": "Semanal", "scientific": "Científico"},
    "fr": {"expression": "Expression", "abilities": "Que peux-tu faire ?", "clock": "Heure actuelle", "area": "Oncologie",
           "what": "De quoi s\u2019agit-il ?", "days": "lundi mardi mercredi jeudi vendredi samedi dimanche",
           "calculate": "Calcule 17*23+4", "locale": "fr-FR", "launcher": "Ouvrir le chat", "input": "Message", "send": "Envoyer",
           "ask": "Crée un flux de recherche sur l'oncologie", "chips": ["Changer le nom", "Ajouter des canaux", "Autre fréquence"],
           "accept": "Accepter et créer le flux", "weekly": "Hebdomadaire", "scientific": "Scientifique"},
}

# Every element of the tray with its own text (its text nodes, not its children's) and the names a person reads or
# hears: aria-label, title, placeholder, alt.
LABELS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('#chat-tray, #chat-tray *')) {
    if (el.closest('[hidden]')) continue;
    const own = [...el.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join('').trim();
    if (own) out.push(own);
    for (const name of ['aria-label', 'title', 'placeholder', 'alt']) {
      const value = el.getAttribute(name);
      if (value && value.trim()) out.push(value.trim());
    }
  }
  return out;
}"""


def english_labels(lang: str) -> list[re.Pattern[str]]:
    """The tray's English words, from the English side of its JavaScript catalog (and the demo's, whose renderers and
    page scripts add cards to it): each msgid the language translates differently, as a pattern of the whole label
    (a placeholder stands for any text)."""
    patterns = []
    for catalog in ("chat/locale/{lang}/LC_MESSAGES/djangojs.po", "pages/demo/locale/{lang}/LC_MESSAGES/djangojs.po"):
        for entry in entries(ROOT / catalog.format(lang=lang)):
            if entry.msgstr.get(0) in ("", entry.msgid):
                continue
            for msgid in filter(None, (entry.msgid, entry.msgid_plural)):
                parts = re.split(r"%\(\w+\)s", msgid)
                patterns.append(re.compile(".+".join(re.escape(p) for p in parts)))
    return patterns


def english_in(page: Page, lang: str) -> list[str]:
    labels: list[str] = page.evaluate(LABELS)
    patterns = english_labels(lang)
    return sorted({label for label in labels for p in patterns if p.fullmatch(label)})


@pytest.fixture
def open_page(chromium: Browser, site_server: LiveServer) -> Iterator[Callable[..., Page]]:
    """open_page(path, lang) -> a signed-in page whose browser speaks `lang` (locale and Accept-Language)."""
    contexts = []

    def make(path: str, lang: str) -> Page:
        locale = EXPECTED[lang]["locale"]
        context = chromium.new_context(viewport=WIDE, locale=locale, extra_http_headers={"Accept-Language": f"{locale},{lang};q=0.9"},
                                       storage_state=login(chromium, site_server))
        contexts.append(context)
        return tray_page(context, site_server.url + path, init_script=None)

    yield make
    for context in contexts:
        context.close()


@pytest.mark.parametrize("lang", list(EXPECTED))
def test_the_whole_tray_and_the_offline_model_speak_the_browsers_language(open_page: Callable[..., Page], lang: str) -> None:
    want = EXPECTED[lang]
    page = open_page("/", lang)
    expect(page.locator("html")).to_have_attribute("lang", lang)

    launcher = page.locator("[data-pagechat-launcher]")
    expect(launcher).to_have_accessible_name(want["launcher"])
    assert english_in(page, lang) == []  # the closed tray: the launcher
    launcher.click()
    box = page.locator("[data-pagechat-input]")
    expect(box).to_be_focused()
    expect(box).to_have_accessible_name(want["input"])
    send = page.locator("[data-pagechat-send]")
    expect(send).to_have_accessible_name(want["send"])
    expect(send).to_have_text(want["send"])
    expect(page.get_by_role("button", name="Open chat", exact=True)).to_have_count(0)
    expect(page.get_by_role("textbox", name="Message", exact=True)).to_have_count(0 if want["input"] != "Message" else 1)
    assert english_in(page, lang) == []  # the open tray: header, welcome, starters, composer

    before = final_messages(page).count()
    box.fill(want["ask"])
    box.press("Enter")
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    reply = final_messages(page).last
    chips = reply.locator(".chat-chip")
    expect(chips).to_have_text(want["chips"])
    expect(reply.get_by_role("button", name=want["accept"], exact=True)).to_be_visible()
    # the proposal's card, in the panel beside the tray: its choices in the language, the values kept in the payload
    card = page.locator(".chat-panel")
    expect(card).to_contain_text(want["weekly"])
    expect(card).to_contain_text(want["scientific"])
    expect(card).not_to_contain_text(re.compile(r"\bweekly\b|\((scientific|clinical)\)"))  # (keywords are search terms: kept)
    assert english_in(page, lang) == []  # the answer, its chips and buttons, the card
    screenshot(page, f"first_minutes_lang_{lang}")

    # a tool's run: its card and status in the language too
    page.keyboard.press("Escape")
    box.fill(want["calculate"])
    box.press("Enter")
    expect(final_messages(page)).to_have_count(before + 2)
    wait_idle(page)
    expect(final_messages(page).last).to_contain_text("395")
    # its card's input, expanded: a labelled field in the language (found by position), never JSON
    card = final_messages(page).last.locator(".chat-tool-card").first
    card.locator(".chat-tool-card__header").click()
    expect(card.locator("dl.chat-tool-card__fields dt")).to_have_text([want["expression"]])
    expect(card.locator("dl.chat-tool-card__fields dd")).to_have_text(["17*23+4"])
    assert english_in(page, lang) == []
    # the conversation list (the header's first button, whatever its name)
    page.locator(".chat-tray__header-actions button").first.click()
    expect(page.locator(".chat-conversation-list li").first).to_be_visible()
    assert english_in(page, lang) == []
    assert_clean(page)


ENGLISH_DAYS = re.compile(r"\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b")


def ask_and_wait(page: Page, text: str) -> Any:
    """Send `text` from the message box (found by its stable attribute); the answer once the turn is over."""
    before = final_messages(page).count()
    box = page.locator("[data-pagechat-input]")
    box.fill(text)
    box.press("Enter")
    expect(final_messages(page)).to_have_count(before + 1)
    wait_idle(page)
    return final_messages(page).last


@pytest.mark.parametrize("lang", list(EXPECTED))
def test_chips_naming_tools_and_payload_types_the_clock_and_the_tabs_speak_the_browsers_language(
        open_page: Callable[..., Page], site_server: LiveServer, lang: str) -> None:
    """Under de, es and fr: the help answer's chips that name a tool or a payload type show and send words of the
    language (the person's bubble says them) and do what they name; the clock names the day in the language; on a
    stream's settings page the answer names the tab as the page's own tab link does, not by its key."""
    want = EXPECTED[lang]
    page = open_page("/", lang)
    page.locator("[data-pagechat-launcher]").click()
    page.locator(".chat-new-btn").click()  # a conversation of its own (the tray may reopen the user's latest)
    expect(final_messages(page)).to_have_count(0)

    # by position: the help answer's chips name the page's tools first (the clock, the calculator), then its payload types
    reply = ask_and_wait(page, want["abilities"])
    chips = reply.locator(".chat-chip")
    expect(chips.nth(0)).to_have_text(want["clock"])
    payload_chip = chips.nth(2)
    said = payload_chip.inner_text().strip()
    assert said and english_in(page, lang) == []
    payload_chip.click()
    expect(page.locator(".chat-bubble--user").last).to_have_text(said)  # what the chip sent: its words in the language
    wait_idle(page)
    expect(final_messages(page).last.locator(".chat-chip").first).to_have_text(want["area"])  # the proposal's first question
    assert english_in(page, lang) == []

    reply = ask_and_wait(page, want["abilities"])
    reply.locator(".chat-chip").nth(0).click()
    expect(page.locator(".chat-bubble--user").last).to_have_text(want["clock"])
    wait_idle(page)
    answer = final_messages(page).last
    expect(answer).to_contain_text(re.compile(r"\b(" + "|".join(want["days"].split()) + r")\b"))
    expect(answer).not_to_contain_text(ENGLISH_DAYS)
    answer.locator(".chat-tool-card__header").first.click()  # the tool's output, as its card shows it
    expect(answer.locator(".chat-tool-card__body pre").first).not_to_contain_text(ENGLISH_DAYS)

    # a stream's settings page, on its second tab: the answer names the tab as its link (a stable id) does
    sid = site_server.query("SELECT id FROM pagechat_demo_researchstream WHERE owner_id = ? ORDER BY id LIMIT 1", demo_id(site_server))[0][0]
    answers = final_messages(page).count()
    page.goto(f"{site_server.url}/research-streams/{sid}/?tab=retrieval")
    expect(page.locator("[data-pagechat-input]")).to_be_visible()  # the tray stays open across a navigation
    expect(final_messages(page)).to_have_count(answers)  # with its conversation shown again (before counting for the next)
    tab = page.locator("#tab-retrieval").inner_text().strip()
    assert tab and tab != "Retrieval"
    reply = ask_and_wait(page, want["what"])
    expect(reply.locator("strong", has_text=re.compile(rf"^{re.escape(tab)}$"))).to_have_count(1)
    expect(reply).not_to_contain_text(re.compile(r"\bretrieval\b", re.I))
    screenshot(page, f"first_minutes_lang_tab_{lang}")
    assert english_in(page, lang) == []
    assert_clean(page)
