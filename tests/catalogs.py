"""The translation catalogs: extract every marked string, and check that each language translates all of them.

`python -m tests.catalogs` (after marking new strings) runs `makemessages` for the server (`django`) and the tray
(`djangojs`) and updates every app's `locale/<lang>/LC_MESSAGES/*.po` in place; translate the new entries, then
`make setup` compiles them. `python -m tests.catalogs --check` (run by `make lint`) extracts into a copy of the
tree and fails on a string with no translation, a fuzzy entry (a guess msgmerge made), a catalog missing for an
app with strings, a plural form missing, or a `msgfmt --check` error (`--check-format`: a translation whose placeholders differ
from the original's; the header and domain checks).

Each app's strings go to its own `locale/`; the site's own `templates/` and `static/` (the demo's frame) go to the
demo app's, `pages/demo/locale/`.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ("de", "es", "fr")  # every catalog is complete in each (English is the source)
DOMAINS = ("django", "djangojs")
# what makemessages walks: the product's apps and the site's own templates and static files
TREE = ("chat", "tools", "payloads", "pages", "templates", "static", "config", "manage.py")
IGNORE = ("*/vendor/*", "*/migrations/*", "*/management/commands/*", "__pycache__", "*.mo", "node_modules", "tests", "docs", "var",
          "artifacts", "staticfiles", "build", "dist")
DEMO_LOCALE = Path("pages") / "demo" / "locale"  # the site's own strings (templates/, static/) are the demo's


@dataclass
class Entry:
    """One catalog entry: its flags, msgid (and plural) and its translations by index (0 for a singular)."""

    msgid: str = ""
    msgid_plural: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    where: str = ""

    @property
    def forms(self) -> int:
        return len(self.msgstr)

    @property
    def untranslated(self) -> bool:
        return not self.msgstr or any(not text for text in self.msgstr.values())


def _unquote(line: str) -> str:
    return str(ast.literal_eval(line.strip()))


def entries(path: Path) -> Iterator[Entry]:
    """The entries of a .po file (the header and obsolete `#~` entries left out)."""
    entry, key = Entry(), ""
    for raw in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        line = raw.strip()
        if not line:
            if entry.msgid:
                yield entry
            entry, key = Entry(), ""
        elif line.startswith("#,"):
            entry.flags |= {f.strip() for f in line[2:].split(",")}
        elif line.startswith("#:"):
            entry.where = entry.where or line[2:].strip()
        elif line.startswith("#"):
            continue
        elif line.startswith("msgid_plural "):
            key, entry.msgid_plural = "plural", _unquote(line[13:])
        elif line.startswith("msgid "):
            key, entry.msgid = "msgid", _unquote(line[6:])
        elif line.startswith("msgstr["):
            index = int(line[7:line.index("]")])
            key = f"msgstr{index}"
            entry.msgstr[index] = _unquote(line[line.index("]") + 1:])
        elif line.startswith("msgstr "):
            key, entry.msgstr[0] = "msgstr0", _unquote(line[7:])
        elif line.startswith('"'):
            text = _unquote(line)
            if key == "msgid":
                entry.msgid += text
            elif key == "plural":
                entry.msgid_plural = (entry.msgid_plural or "") + text
            elif key.startswith("msgstr"):
                entry.msgstr[int(key[6:])] += text


def makemessages(root: Path) -> None:
    """Extract both domains for every language under `root` (a checkout or a copy of one), updating its catalogs."""
    import django
    from django.core.management import call_command
    from django.test.utils import override_settings

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    for app in ("chat", "tools", "payloads", "pages", str(DEMO_LOCALE.parent)):
        (root / app / "locale").mkdir(exist_ok=True)  # makemessages writes an app's strings to its own locale/
    cwd = Path.cwd()
    try:
        os.chdir(root)
        with override_settings(LOCALE_PATHS=[str(root / DEMO_LOCALE)]):  # files outside the apps: the demo's catalog
            for domain in DOMAINS:
                call_command("makemessages", locale=list(LANGUAGES), domain=domain, ignore_patterns=list(IGNORE),
                             no_wrap=True, no_obsolete=True, no_location=False, add_location="file", verbosity=0)
    finally:
        os.chdir(cwd)


def catalogs(root: Path) -> list[Path]:
    """The .po files of the product's apps under `root` (never a build's or a virtualenv's copies)."""
    return sorted(p for name in TREE if (root / name).is_dir() for p in (root / name).glob("**/locale/*/LC_MESSAGES/*.po"))


def nplurals(path: Path) -> int:
    """The number of plural forms the catalog's header declares (Plural-Forms), 2 when it declares none."""
    m = re.search(r"nplurals\s*=\s*(\d+)", path.read_text(encoding="utf-8"))
    return int(m.group(1)) if m else 2


def problems(root: Path) -> list[str]:
    """Everything wrong with the catalogs under `root`: untranslated or fuzzy entries, plural forms missing, format
    errors (`msgfmt -c`: --check-format, and the header and domain checks)."""
    found: list[str] = []
    for po in catalogs(root):
        name = po.relative_to(root)
        forms = nplurals(po)
        for entry in entries(po):
            if "fuzzy" in entry.flags:
                found.append(f"{name}: fuzzy: {entry.msgid!r} ({entry.where})")
            elif entry.untranslated:
                found.append(f"{name}: untranslated: {entry.msgid!r} ({entry.where})")
            elif entry.msgid_plural is not None and entry.forms != forms:
                found.append(f"{name}: {entry.forms} of {forms} plural forms: {entry.msgid!r} ({entry.where})")
        check = subprocess.run(["msgfmt", "--check", "-o", os.devnull, str(po)], capture_output=True, text=True)
        if check.returncode != 0:
            found.append(f"{name}: msgfmt --check: {check.stderr.strip()}")
    return found


def check(root: Path = ROOT) -> list[str]:
    """Extract into a copy of `root`'s tree and report what the committed catalogs lack (nothing is written to `root`)."""
    with tempfile.TemporaryDirectory(prefix="catalogs-") as tmp:
        copy = Path(tmp)
        for name in TREE:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.mo", "vendor"))
            elif source.exists():
                shutil.copy2(source, copy / name)
        makemessages(copy)
        found = problems(copy)
        # an app whose strings have no committed catalog at all shows up above (its fresh catalog is empty); a
        # committed catalog makemessages would not write (an app without strings any more) is stale
        fresh = {p.relative_to(copy) for p in catalogs(copy)}
        found += [f"{p.relative_to(root)}: no marked strings use this catalog any more" for p in catalogs(root) if p.relative_to(root) not in fresh]
        return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail on missing, fuzzy or malformed translations (writes nothing)")
    args = parser.parse_args(argv)
    if not args.check:
        makemessages(ROOT)
        for line in problems(ROOT):
            print(line)
        return 0
    found = check()
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"{len(found)} translation problem(s): run `python -m tests.catalogs`, translate, see docs/translations.md", file=sys.stderr)
        return 1
    print(f"catalogs complete: {len(catalogs(ROOT))} catalogs in {', '.join(LANGUAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
