"""Issue 37, item 9 through the consumer: the demo's main requests written in German, Spanish and French are understood
by the offline model as their English versions are (the same intent, tool and subject), and answered in that language:
its own sentences, the page's and tools' titles, chips, buttons and enumerated values; no English sentence of its
catalogs, no tool description (English, for a model) and no English title where the language has its own."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import translation
from django.utils.translation import gettext, ngettext

from chat.models import Run
from pages.demo.common import REFINEMENTS
from pages.demo.models import ResearchStream
from pages.registry import registry as page_registry
from payloads.registry import registry as payload_registry
from tests.catalogs import entries
from tests.conftest import ws_connect
from tools.registry import registry as tool_registry

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[3]
LANGUAGES = ("de", "es", "fr")

# The demo's five main requests (issue 37: what can you do, how many streams, create a stream, calculate, search
# articles), on the page where each is asked, as a person writes them in each language.
REQUESTS: dict[str, tuple[str, dict[str, str]]] = {
    "abilities": ("home", {"en": "What can you do?", "de": "Was kannst du?", "es": "¿Qué puedes hacer?", "fr": "Que peux-tu faire ?"}),
    "count": ("home", {"en": "How many streams do I have?", "de": "Wie viele Forschungsströme habe ich?",
                       "es": "¿Cuántos flujos tengo?", "fr": "Combien de flux ai-je ?"}),
    "create": ("home", {"en": "Create a research stream about Oncology", "de": "Erstelle einen Forschungsstrom über Onkologie",
                        "es": "Crea un flujo de investigación sobre Oncología", "fr": "Crée un flux de recherche sur l'Oncologie"}),
    "calculate": ("reports", {"en": "Calculate 17*23+4", "de": "Berechne 17*23+4", "es": "Calcula 17*23+4", "fr": "Calcule 17*23+4"}),
    "search": ("reports", {"en": "Search articles about CRISPR", "de": "Suche Artikel über CRISPR", "es": "Busca artículos sobre CRISPR",
                           "fr": "Cherche des articles sur CRISPR"}),
}
SUBJECTS = {"en": "Oncology", "de": "Onkologie", "es": "Oncología", "fr": "Oncologie"}
CATALOGS = ("chat/locale/{lang}/LC_MESSAGES/django.po", "pages/demo/locale/{lang}/LC_MESSAGES/django.po",
            "tools/locale/{lang}/LC_MESSAGES/django.po", "pages/locale/{lang}/LC_MESSAGES/django.po")
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|\*\*|[“”„«»]")


def english_sentences(lang: str) -> set[str]:
    """Runs of three or more words of every server-side msgid its catalogs translate differently in `lang`: none of
    them may appear in an answer in `lang` (the offline model's phrases, the demo's, the tools' and the pages')."""
    found: set[str] = set()
    for pattern in CATALOGS:
        path = ROOT / pattern.format(lang=lang)
        for entry in entries(path) if path.exists() else []:
            if entry.msgstr.get(0) in ("", entry.msgid):
                continue
            for piece in PLACEHOLDER.split(entry.msgid):
                piece = piece.strip(" .,:;!?()")
                if len(re.findall(r"[A-Za-z]+", piece)) >= 3:
                    found.add(piece)
    return found


def english_titles(page: str, lang: str) -> set[str]:
    """The page's, its tools' and its payload types' English titles that `lang` translates (whole words of them must not
    appear), and the first words of its tools' descriptions (English, written for a model)."""
    spec = page_registry.get(page)
    tools = [t for name in [*spec.tool_names({}), *tool_registry.global_names()] if (t := tool_registry.get(name))]
    payloads = [p for name in spec.payload_types({}) if (p := payload_registry.get(name))]
    with translation.override("en"):
        english = [spec.display_title(), *(t.display_title() for t in tools), *(p.display_title() for p in payloads)]
    with translation.override(lang):
        translated = [spec.display_title(), *(t.display_title() for t in tools), *(p.display_title() for p in payloads)]
    out = {e for e, t in zip(english, translated, strict=True) if e != t}
    return out | {" ".join(t.description.split()[:4]) for t in tools if t.description}


def assert_in_language(text: str, page: str, lang: str) -> None:
    leaks = [s for s in english_sentences(lang) if s in text]
    leaks += [t for t in english_titles(page, lang) if re.search(rf"(?<!\w){re.escape(t)}(?!\w)", text)]
    assert not leaks, f"English in the {lang} answer: {leaks}\n{text}"


async def turn(ws: Any, text: str, page: str, lang: str, **fields: Any) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """One message in `lang` (as the tray sends it): the complete payload, the events and the intent that answered."""
    await ws.chat(text, context={"current_page": page}, language=lang, **fields)
    events = await ws.until_terminal()
    done = events[-1]["payload"]
    run = await Run.objects.aget(pk=done["run_id"])
    return done, events, run.diagnostics["raw_llm_response"][0]["output"]["intent"]


def tool_calls(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(e["tool"], e["input"]) for e in events if e["type"] == "tool_start"]


@pytest.fixture
def streams(user: Any) -> None:
    ResearchStream.objects.create(owner=user, name="CRISPR Therapeutics Watch", report_frequency="biweekly")


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("request_name", list(REQUESTS))
async def test_the_demos_main_requests_are_understood_and_answered_in_the_users_language(
        request_name: str, lang: str, user: Any, streams: None, corpus: int) -> None:
    page, texts = REQUESTS[request_name]
    ws, _ = await ws_connect(user)
    english, english_events, english_intent = await turn(ws, texts["en"], page, "en")
    done, events, intent = await turn(ws, texts[lang], page, lang)
    if request_name == "abilities":  # its last chip ("What is this?") sends words of the language, understood as the English
        english_chip, _e, english_chip_intent = await turn(ws, english["suggested_values"][-1]["value"], page, "en", interaction_type="value_selected")
        chip, _e, chip_intent = await turn(ws, done["suggested_values"][-1]["value"], page, lang, interaction_type="value_selected")
        assert chip_intent == english_chip_intent == "answer_from_page" and done["suggested_values"][-1]["value"] != english["suggested_values"][-1]["value"]
        assert_in_language(chip["message"], page, lang)
    await ws.close()

    # understood as the English request is: the same intent, the same tool with the same input
    assert intent == english_intent and (intent == "help") == (request_name == "abilities"), (intent, english_intent)
    assert tool_calls(events) == tool_calls(english_events)
    text = done["message"]
    assert_in_language(text, page, lang)
    for chip in [*done["suggested_values"], *done["suggested_actions"]]:
        assert_in_language(chip["label"], page, lang)

    with translation.override(lang):
        if request_name == "abilities":
            assert text.startswith(gettext("Hello!") + " ") and f"**{page_registry.get('home').display_title()}**" in text
            assert [v["label"] for v in done["suggested_values"]][:2] == [tool_registry.get("get_current_time").display_title(),
                                                                          tool_registry.get("calculate").display_title()]
        elif request_name == "count":
            # the page's facts: the key in the user's language, the values as the page wrote them in it
            stream = gettext("%(count)s (the latest: %(streams)s)") % {"count": 1, "streams": f"CRISPR Therapeutics Watch ({gettext('Biweekly').lower()})"}
            assert f"- **{gettext('Research streams')}:** {stream}" in text
        elif request_name == "create":
            form = done["custom_payload"]
            assert form["type"] == english["custom_payload"]["type"] == "research_stream_form"
            # the user's own subject, as written, in the proposal the page's example gives, written in the language
            assert form["data"]["stream_name"] == gettext("{Topic} Intelligence").replace("{Topic}", SUBJECTS[lang])
            assert form["data"]["report_frequency"] == "weekly" and [c["type"] for c in form["data"]["channels"]] == ["scientific", "clinical"]
            assert [v["label"] for v in done["suggested_values"]] == [gettext(v["label"]) for v in REFINEMENTS]
            assert [v["value"] for v in done["suggested_values"]] == [gettext(v["value"]) for v in REFINEMENTS]  # the words it sends
            action = gettext("Create stream") if lang == "de" else gettext("Create stream")[:1].lower() + gettext("Create stream")[1:]  # inside a sentence
            assert [a["label"] for a in done["suggested_actions"]] == [gettext("Accept & %(action)s") % {"action": action}, gettext("Cancel")]
        elif request_name == "calculate":
            assert tool_calls(events) == [("calculate", {"expression": "17*23+4"})] and "395" in text
            assert text.startswith(gettext("Let me use “%(tool)s” for that.") % {"tool": tool_registry.get("calculate").display_title()})
        else:
            assert [name for name, _input in tool_calls(events)] == ["search_articles"] and tool_calls(events)[0][1]["query"] == "CRISPR"
            found = re.search(r"Found (\d+) articles? for 'CRISPR'", english["message"])
            assert found, english["message"]
            n = int(found.group(1))
            said = ngettext("Found %(count)d article for %(query)s:", "Found %(count)d articles for %(query)s:", n) % {"count": n, "query": "'CRISPR'"}
            assert said.rstrip(" :") in text, text

@pytest.mark.parametrize("lang", LANGUAGES)
async def test_the_create_a_stream_conversation_runs_on_its_chips_in_the_users_language(lang: str, user: Any, settings: Any) -> None:
    """The demo's main conversation (seed 000) in `lang`: the button's words, the area chips and each refinement chip
    are in `lang` - the words a chip sends too - and each gets the answer its English chip gets."""
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1000
    ws, _ = await ws_connect(user)

    async def conversation(language: str, chips: tuple[int, ...]) -> list[tuple[str, dict[str, Any]]]:
        """(intent, complete payload) of: the button, its first area chip, then the chips at `chips` of each answer."""
        with translation.override(language):
            ask = gettext("Help me create a research stream")
        done, _e, intent = await turn(ws, ask, "home", language)
        said = [(intent, done)]
        conv = done["conversation_id"]
        area = done["suggested_values"][0]
        done, _e, intent = await turn(ws, area["value"], "home", language, conversation_id=conv, interaction_type="value_selected")
        said.append((intent, done))
        for index in chips:
            chip = done["suggested_values"][index]
            done, _e, intent = await turn(ws, chip["value"], "home", language, conversation_id=conv, interaction_type="value_selected")
            said.append((intent, done))
        return said

    # each refinement chip; "Change name", then its "Let me type it"
    for chips in ((), (0,), (1,), (2,), (0, -1)):
        english = await conversation("en", chips)
        translated = await conversation(lang, chips)
        assert [i for i, _d in translated] == [i for i, _d in english], (chips, [i for i, _d in translated])
        for _intent, done in translated:
            assert_in_language(done["message"], "home", lang)
            for chip in [*done["suggested_values"], *done["suggested_actions"]]:
                assert_in_language(chip["label"], "home", lang)
                assert not (chip.get("value") and chip["value"] in {v["value"] for v in REFINEMENTS}), chip  # sends its words in `lang`
    assert [i for i, _d in translated] == ["propose", "area_answer", "refine_field", "type_it"]
    with translation.override(lang):
        assert [v["label"] for v in translated[0][1]["suggested_values"]] == [gettext(v) for v in ("Oncology", "Cardiology", "Neurology", "Immunology")]
        assert translated[1][1]["custom_payload"]["data"]["stream_name"] == gettext("{Topic} Intelligence").replace("{Topic}", gettext("oncology research").title())
    await ws.close()


async def test_a_stream_proposed_in_german_is_refined_with_german_choices_and_the_value_kept(user: Any) -> None:
    """The enumerated values are shown in the user's language ("Zweiwöchentlich") and sent as the values ("biweekly");
    a value typed in German is read back as the value the schema allows."""
    ws, _ = await ws_connect(user)
    first, _e, _i = await turn(ws, "Erstelle einen Forschungsstrom über Kardiologie", "home", "de")
    conv = first["conversation_id"]
    chip = next(v for v in first["suggested_values"] if v["label"] == "Andere Häufigkeit")
    asked, _e, intent = await turn(ws, chip["value"], "home", "de", conversation_id=conv, interaction_type="value_selected")
    assert intent == "refine_field"
    assert asked["message"].startswith("Welchen Wert soll Berichtshäufigkeit haben? (derzeit wöchentlich)"), asked["message"]
    assert [(v["label"], v["value"]) for v in asked["suggested_values"]] == [
        ("Täglich", "daily"), ("Zweiwöchentlich", "biweekly"), ("Monatlich", "monthly")]
    done, _e, intent = await turn(ws, "zweiwöchentlich bitte", "home", "de", conversation_id=conv)
    assert intent == "field_answer"
    assert done["custom_payload"]["data"]["report_frequency"] == "biweekly"
    assert "**Zweiwöchentlich**" in done["message"] and "biweekly" not in done["message"]
    await ws.close()


async def test_the_turns_plan_is_made_in_the_users_language(user: Any) -> None:
    """The page's title and its context (the facts' values) reach the model in the user's language: the plan is built
    on a database thread of its own, which must carry the turn's language there."""
    await sync_to_async(ResearchStream.objects.create)(owner=user, name="Heart Watch", report_frequency="monthly")
    ws, _ = await ws_connect(user)
    done, _e, _i = await turn(ws, "Hallo", "home", "de")
    await ws.close()
    run = await Run.objects.aget(pk=done["run_id"])
    system = run.diagnostics["system_prompt"]
    assert "\nPage title: Start\n" in system and "Page: Start" in system
    assert "Research streams: 1 (zuletzt: Heart Watch (monatlich))" in system


def _first_words(page: str, stream_id: int) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """What a person is offered to send first on each demo page: its starters and, on the home page, its own chips and
    button (the same words in every language, translated by the catalogs), with the page's request context."""
    from pages.demo.views import home  # noqa: F401  (the view's chips are the words checked below)

    context: dict[str, Any] = {"current_page": page}
    if page == "edit_research_stream":
        context.update(entity_type="research_stream", entity_id=stream_id, stream_id=stream_id, active_tab="semantic")
    words: list[Any] = list(page_registry.get(page).starters)
    if page == "home":
        words += ["Help me create a research stream", "Help me create a research stream about oncology research",
                  "Help me create a research stream about CRISPR gene editing"]
    return {page: (context, words)}


@pytest.mark.parametrize("lang", LANGUAGES)
async def test_every_starter_and_page_chip_of_the_demo_is_understood_in_the_users_language(lang: str, user: Any, corpus: int, settings: Any) -> None:
    """Each first question the demo offers (the welcome's starters, the home page's chips and button), sent in `lang`
    as the tray sends it, is answered by the intent its English words get, and the answer is in `lang`."""
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1000  # two messages per first question, one user
    stream = await sync_to_async(ResearchStream.objects.create)(owner=user, name="Heart Watch", purpose="cardiology", report_frequency="weekly")
    pages: dict[str, tuple[dict[str, Any], list[Any]]] = {}
    for name in ("home", "reports", "streams_list", "new_stream", "edit_research_stream"):
        pages.update(_first_words(name, stream.pk))
    ws, _ = await ws_connect(user)
    checked = 0
    for page, (context, words) in pages.items():
        for text in words:
            with translation.override("en"):
                english = gettext(str(text))
            with translation.override(lang):
                translated = gettext(str(text))
            assert translated != english, f"{english!r} has no {lang} translation"
            await ws.chat(english, context=context, language="en")
            english_run = (await ws.until_terminal())[-1]["payload"]
            await ws.chat(translated, context=context, language=lang)
            done = (await ws.until_terminal())[-1]["payload"]
            want = (await Run.objects.aget(pk=english_run["run_id"])).diagnostics["raw_llm_response"][0]["output"]["intent"]
            got = (await Run.objects.aget(pk=done["run_id"])).diagnostics["raw_llm_response"][0]["output"]["intent"]
            assert got == want, f"{page}: {translated!r} ({lang}) -> {got}, {english!r} -> {want}"
            assert_in_language(done["message"], page, lang)
            checked += 1
    await ws.close()
    assert checked >= 17


def _intent_and_effect(done: dict[str, Any], events: list[dict[str, Any]], intent: str) -> tuple[str, list[str], str | None]:
    """What a turn did, whatever its words: its intent, the tools it called and the payload type it proposed."""
    return intent, [name for name, _input in tool_calls(events)], (done["custom_payload"] or {}).get("type")


@pytest.mark.parametrize("lang", LANGUAGES)
async def test_the_chips_that_name_a_tool_or_a_payload_type_send_words_of_the_users_language(
        lang: str, user: Any, corpus: int, settings: Any) -> None:
    """The help answer's chips (a tool's, a payload type's) on every demo page, and the chips of a "which one?"
    question, send words of the user's language, never a tool's English description or "propose <type>", and each
    does what its English chip does (the same intent, tool and payload type)."""
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1000
    stream = await sync_to_async(ResearchStream.objects.create)(owner=user, name="Heart Watch", purpose="cardiology", report_frequency="weekly")
    pages = {
        "home": {"current_page": "home"},
        "reports": {"current_page": "reports"},
        "streams_list": {"current_page": "streams_list"},
        "edit_research_stream": {"current_page": "edit_research_stream", "entity_type": "research_stream", "entity_id": stream.pk,
                                 "stream_id": stream.pk, "active_tab": "retrieval"},
    }
    asks = {"abilities": REQUESTS["abilities"][1], "which": {"en": "Change something", "de": "Ändere etwas", "es": "Cambia algo",
                                                           "fr": "Change quelque chose"}}
    ws, _ = await ws_connect(user)
    named = {"tool": 0, "payload": 0}
    for page, context in pages.items():
        for ask in asks.values():
            await ws.chat(ask["en"], context=context, language="en")
            english = (await ws.until_terminal())[-1]["payload"]
            await ws.chat(ask[lang], context=context, language=lang)
            done = (await ws.until_terminal())[-1]["payload"]
            assert len(done["suggested_values"]) == len(english["suggested_values"]), (page, ask[lang])
            for english_chip, chip in zip(english["suggested_values"], done["suggested_values"], strict=True):
                if english_chip["value"] in {t.description.split(".")[0] for t in tool_registry}:
                    named["tool"] += 1
                elif english_chip["value"].startswith("propose "):
                    named["payload"] += 1
                else:
                    continue
                assert chip["value"] != english_chip["value"], chip
                assert_in_language(chip["value"], page, lang)
                await ws.chat(english_chip["value"], context=context, language="en", interaction_type="value_selected")
                english_events = await ws.until_terminal()
                english_run = await Run.objects.aget(pk=english_events[-1]["payload"]["run_id"])
                want = _intent_and_effect(english_events[-1]["payload"], english_events, english_run.diagnostics["raw_llm_response"][0]["output"]["intent"])
                got_done, got_events, got_intent = await turn(ws, chip["value"], page, lang, **{"interaction_type": "value_selected"}) \
                    if page != "edit_research_stream" else await _turn_in(ws, chip["value"], context, lang)
                assert _intent_and_effect(got_done, got_events, got_intent) == want, (page, chip, want)
                assert_in_language(got_done["message"], page, lang)
    await ws.close()
    assert named["tool"] >= 4 and named["payload"] >= 4, named


async def _turn_in(ws: Any, text: str, context: dict[str, Any], lang: str) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """`turn` with the whole request context of the page (an entity's page, its tab)."""
    await ws.chat(text, context=context, language=lang, interaction_type="value_selected")
    events = await ws.until_terminal()
    done = events[-1]["payload"]
    run = await Run.objects.aget(pk=done["run_id"])
    return done, events, run.diagnostics["raw_llm_response"][0]["output"]["intent"]


@pytest.mark.parametrize("lang", LANGUAGES)
async def test_the_time_tool_names_the_day_and_month_in_the_users_language(lang: str, user: Any) -> None:
    """The clock's answer (the tool's output, shown to the user) names the day and the month in the user's language."""
    from datetime import UTC, datetime

    from django.utils.dates import MONTHS, WEEKDAYS

    ws, _ = await ws_connect(user)
    with translation.override(lang):
        title = tool_registry.get("get_current_time").display_title()
    before = datetime.now(UTC)
    done, events, _intent = await turn(ws, title, "home", lang, interaction_type="value_selected")  # what its chip sends
    await ws.close()
    assert tool_calls(events) == [("get_current_time", {})]
    output = done["tool_history"][0]["output"]
    with translation.override(lang):
        days = {str(WEEKDAYS[d.weekday()]) for d in (before, datetime.now(UTC))}
        months = {str(MONTHS[d.month]) for d in (before, datetime.now(UTC))}
    with translation.override("en"):
        english = {str(WEEKDAYS[before.weekday()]), str(MONTHS[before.month])} - days - months
    assert any(d in output for d in days) and any(m in output for m in months), output
    assert not any(re.search(rf"\b{e}\b", output) for e in english), output
    assert any(d in done["message"] for d in days), done["message"]  # and the answer says it


@pytest.mark.parametrize("lang", LANGUAGES)
async def test_the_stream_pages_tab_is_named_as_the_page_names_it(lang: str, user: Any) -> None:
    """On the stream's settings page the answer names the active tab by its title in the user's language (the tab's
    link on the page), never by its key ("retrieval")."""
    from pages.demo.forms import TABS

    stream = await sync_to_async(ResearchStream.objects.create)(owner=user, name="Heart Watch", purpose="cardiology", report_frequency="weekly")
    ws, _ = await ws_connect(user)
    for key, tab in TABS.items():
        context = {"current_page": "edit_research_stream", "entity_type": "research_stream", "entity_id": stream.pk,
                   "stream_id": stream.pk, "active_tab": key}
        with translation.override(lang):
            ask, title = gettext("What is this about?"), tab.title
        await ws.chat(ask, context=context, language=lang)
        text = (await ws.until_terminal())[-1]["payload"]["message"]
        with translation.override(lang):
            assert gettext("You are on the **%(tab)s** tab.") % {"tab": title} in text, text
        assert f"**{key}**" not in text and title != key.title()
        assert not re.search(r"\bretrieval\b", text, re.I), text  # nor in the stream's facts ("Retrieval queries")
    await ws.close()
