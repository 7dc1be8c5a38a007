"""The offline model reads German, Spanish and French: its glossary turns the words its intents look for into English,
leaves the user's subject as written, and is used only for the language the prompt names (docs/offline-model.md)."""
from __future__ import annotations

import json
import re

import pytest
from django.utils import translation

from chat.prompt.system import PromptInput, system_prompt_build
from chat.providers.base import ProviderRequest
from chat.providers.offline import Glossary, Reading, decide, glossary
from chat.providers.offline.phrasing import choice_label, choice_said


@pytest.mark.parametrize(("lang", "text", "read"), [
    ("de", "Was kannst du?", "what can you do?"),
    ("de", "Wie viele Forschungsströme habe ich?", "how many research stream have I?"),
    ("de", "Erstelle einen Forschungsstrom über Onkologie", "create a research stream about Onkologie"),
    ("de", "Suche Artikel über CRISPR", "search articles about CRISPR"),
    ("es", "¿Qué puedes hacer?", "¿what can you do?"),
    ("es", "¿Cuantos flujos tengo?", "¿how many streams have?"),  # typed without its accent
    ("es", "Busca artículos sobre CRISPR", "search articles about CRISPR"),
    ("fr", "Que peux-tu faire ?", "what can you do ?"),
    ("fr", "Qu'est-ce que tu peux faire ici ?", "what can you do here ?"),
    ("fr", "Crée un flux de recherche sur l'oncologie", "create a research stream about the oncologie"),
    ("fr", "Où est-il ? Lui ou moi ?", "where is it ? Lui or me ?"),  # "où" is not "ou"
])
def test_the_glossary_reads_the_requests_words_in_english_and_keeps_the_subject(lang: str, text: str, read: str) -> None:
    assert glossary.gloss(text, lang) == read


def test_english_and_languages_without_a_glossary_are_read_as_written() -> None:
    for language in (None, "", "en", "ja"):
        assert glossary.gloss("Was it the Forschungsstrom?", language) == "Was it the Forschungsstrom?"
    assert glossary.gloss("Erstelle", "de-AT") == "create"  # a region is its language


def test_a_site_adds_its_own_words_phrases_and_prefixes() -> None:
    words = Glossary()
    words.add("de", {"bestellung": "order", "wo ist": "where is", "liefer*": "delivery"})
    assert words.gloss("Wo ist meine Bestellung 1234? Lieferadresse", "de") == "where is meine order 1234? delivery"
    words.add("de", {"bestellung": "purchase"})  # added again: its new meaning
    assert words.gloss("Bestellung", "de") == "purchase"
    assert words.languages() == ["de"]


def _reading(lang: str | None, text: str) -> Reading:
    system = system_prompt_build(PromptInput(language=lang, context_text="The user is on the home page."))
    return Reading(ProviderRequest(system=system, messages=[{"role": "user", "content": text}], tools=[], model="m", max_tokens=100))


def test_the_reading_glosses_in_the_prompts_language_and_keeps_what_was_written() -> None:
    german = _reading("de", "Erstelle einen Strom über Kardiologie")
    assert german.language == "de" and german.written_text == "Erstelle einen Strom über Kardiologie"
    assert german.user_text == "create a stream about Kardiologie" and german.asks_change
    english = _reading(None, "Erstelle einen Strom")
    assert english.language == "" and english.user_text == "Erstelle einen Strom" and not english.asks_change


def test_words_of_any_script_are_words() -> None:
    assert _reading("de", "Übersicht über Immuntherapie-Nebenwirkungen").user_words >= {"übersicht", "immuntherapie", "nebenwirkungen"}


def test_an_enumerated_value_is_named_by_its_value_or_its_label_the_longest_first() -> None:
    allowed = ["daily", "weekly", "biweekly", "monthly"]
    assert choice_said(allowed, "make it biweekly") == "biweekly"  # not "weekly", which it contains
    assert choice_said(allowed, "no idea") is None
    with translation.override("de"):
        assert choice_label("biweekly") == "Zweiwöchentlich"
        assert choice_said(allowed, "zweiwöchentlich bitte") == "biweekly" and choice_said(allowed, "wöchentlich") == "weekly"


def test_the_troubleshooting_chips_send_words_of_the_users_language_and_stay_on_the_error() -> None:
    error = {"message": "Permission denied for stream 12", "code": "forbidden"}
    system = system_prompt_build(PromptInput(language="de", context_text="The user is on the home page.", request_context={"current_page": "home", "error": error}))
    first = decide(ProviderRequest(system=system, messages=[{"role": "user", "content": "Warum ging das schief?"}], tools=[], model="m", max_tokens=200))
    assert first.intent == "troubleshoot"
    m = re.search(r"^SUGGESTED_VALUES: (.*)$", first.text, re.M)
    assert m
    chips = json.loads(m.group(1))
    assert [c["value"] for c in chips] == ["Was bedeutet dieser Fehler?", "Wie behebe ich diesen Fehler?"]
    for chip in chips:
        again = decide(ProviderRequest(system=system, messages=[{"role": "user", "content": chip["value"]}], tools=[], model="m", max_tokens=200))
        assert again.intent == "troubleshoot"
