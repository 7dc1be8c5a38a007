"""The catalog check `make lint` runs (tests/catalogs.py): complete on this checkout, failing on a missing
translation, a fuzzy entry, a placeholder a translation lost, and a newly marked string nobody translated."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests import catalogs

GERMAN_JS = Path("chat/locale/de/LC_MESSAGES/djangojs.po")
FRENCH = Path("chat/locale/fr/LC_MESSAGES/django.po")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the checkout's translated tree (what the check reads), to break on purpose."""
    for name in catalogs.TREE:
        source = catalogs.ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
        elif source.exists():
            shutil.copy2(source, tmp_path / name)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_this_checkout_is_completely_translated() -> None:
    assert catalogs.check() == []


def test_every_app_with_strings_has_all_three_languages() -> None:
    found = {p.relative_to(catalogs.ROOT) for p in catalogs.catalogs(catalogs.ROOT)}
    for app, domain in (("chat", "django"), ("chat", "djangojs"), ("pages/demo", "django")):
        for lang in catalogs.LANGUAGES:
            assert Path(app) / "locale" / lang / "LC_MESSAGES" / f"{domain}.po" in found


def test_an_emptied_translation_fails(tree: Path) -> None:
    _edit(tree / GERMAN_JS, 'msgstr "Senden"', 'msgstr ""')
    assert any(p.startswith(f"{GERMAN_JS}: untranslated: 'Send'") for p in catalogs.check(tree))


def test_a_fuzzy_entry_fails(tree: Path) -> None:
    _edit(tree / GERMAN_JS, '\nmsgid "Send"\n', '\n#, fuzzy\nmsgid "Send"\n')
    assert any("fuzzy: 'Send'" in p for p in catalogs.check(tree))


def test_a_translation_that_loses_a_placeholder_fails(tree: Path) -> None:
    _edit(tree / FRENCH, '**%(tab)s**."', '."')  # "Vous êtes sur l'onglet **%(tab)s**." loses its tab
    problems = catalogs.check(tree)
    assert any(p.startswith(f"{FRENCH}: msgfmt --check") for p in problems), problems


def test_a_plural_form_left_empty_or_missing_fails(tree: Path) -> None:
    path = tree / "pages/demo/locale/es/LC_MESSAGES/django.po"
    _edit(path, 'msgstr[2] "%(channels)s canales"', 'msgstr[2] ""')
    assert any("untranslated: '%(channels)s channel'" in p for p in catalogs.check(tree))
    _edit(path, '\nmsgstr[2] ""', "")  # Spanish has three forms (Django's rule): two are not enough
    assert any("2 of 3 plural forms: '%(channels)s channel'" in p for p in catalogs.check(tree))


def test_a_newly_marked_string_without_translations_fails(tree: Path) -> None:
    view = tree / "chat/static/chat/view.js"
    _edit(view, 'gettext("Jump to latest")', 'gettext("Jump to the newest message")')
    problems = catalogs.check(tree)
    for lang in catalogs.LANGUAGES:
        assert any(re.match(rf"chat/locale/{lang}/LC_MESSAGES/djangojs.po: (untranslated|fuzzy): 'Jump to the newest message'", p)
                   for p in problems), problems
