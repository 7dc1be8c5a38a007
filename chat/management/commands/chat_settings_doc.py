"""`manage.py chat_settings_doc [--check]`: write docs/settings.md, the reference of every engine setting (chat/conf.py)."""
from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.conf import ChatSettings, Setting

_SECTION = re.compile(r"^\s+# ---- (.+?) ----")
_DECLARED = re.compile(r"^\s+([A-Z][A-Z0-9_]+):")
INTRO = """# Settings

Every setting pagechat reads, with its default. A project sets none of them to start; set one in your Django settings
(the demo's `config/settings.py` also takes each from the environment variable of the same name). A wrong value
(a wrong type, a negative number, a provider or backend that does not import) is an error at `manage.py check`
(`chat.E001`-`chat.E008`), not at run time. Values are read once and cached; `override_settings` in tests works.

This page is generated from [`chat/conf.py`](../chat/conf.py) by `manage.py chat_settings_doc` (`make lint` fails when
it is stale).
"""


def _sections() -> list[tuple[str, list[str]]]:
    """The settings in the order chat/conf.py declares them, under its `# ---- section ----` comments."""
    sections: list[tuple[str, list[str]]] = []
    specs = ChatSettings.specs()
    for line in inspect.getsource(ChatSettings).splitlines():
        if m := _SECTION.match(line):
            sections.append((m.group(1), []))
        elif (m := _DECLARED.match(line)) and m.group(1) in specs:
            sections[-1][1].append(m.group(1))
    return sections


def _type(spec: Setting) -> str:
    """The type, with the bound `manage.py check` enforces on a number."""
    kinds = [getattr(k, "__name__", str(k)) for k in (getattr(spec.kind, "__args__", None) or (spec.kind,))]
    text = " or ".join("None" if k == "NoneType" else k for k in kinds)
    if spec.cast in (int, float) and spec.minimum is not None:
        text += " > 0" if spec.positive else f" ≥ {spec.minimum:g}"
    return text


def _default(spec: Setting) -> str:
    value = spec.default
    if value is None or value == "":
        return "see meaning" if spec.derived is not None else ("—" if value is None else '`""`')
    if isinstance(value, dict):
        return "see meaning" if len(repr(value)) > 40 else f"`{value!r}`"
    if isinstance(value, bool):
        return f"`{value}`"
    if isinstance(value, int) and spec.name.endswith("_BYTES") and value >= 1024:
        size = f"{value / 1024 / 1024:g} MiB" if value >= 1024 * 1024 else f"{value / 1024:g} KiB"
        return f"`{value}` ({size})"
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def settings_text() -> str:
    """docs/settings.md's exact text."""
    specs = ChatSettings.specs()
    parts = [INTRO]
    for title, names in _sections():
        parts.append(f"\n## {title[0].upper()}{title[1:]}\n\n| setting | type | default | meaning |\n|---|---|---|---|\n")
        for name in names:
            spec = specs[name]
            meaning = spec.help.replace("|", "\\|")
            parts.append(f"| `{name}` | {_type(spec)} | {_default(spec)} | {meaning} |\n")
    return "".join(parts)


class Command(BaseCommand):
    help = "Write docs/settings.md, the reference of every pagechat setting (--check: fail if it is stale)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", default="docs/settings.md", help="the file (default: docs/settings.md)")
        parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is missing or stale")

    def handle(self, *args: Any, output: str, check: bool, **options: Any) -> None:
        path, text = Path(output), settings_text()
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                raise CommandError(f"stale settings reference: {path}; run `manage.py chat_settings_doc`")
            self.stdout.write("the settings reference is up to date")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {path}")
