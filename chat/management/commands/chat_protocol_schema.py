"""`manage.py chat_protocol_schema [--check] [--out DIR]`: publish the protocol models as JSON Schema."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.events import protocol_schemas


def schema_text(schema: dict[str, Any]) -> str:
    """The file's exact text (stable: a stale file differs from it)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


class Command(BaseCommand):
    help = "Write docs/protocol/events.schema.json and frames.schema.json from chat.events (--check: fail if stale)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", default="docs/protocol", help="directory of the schema files (default: docs/protocol)")
        parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is missing or stale")

    def handle(self, *args: Any, out: str, check: bool, **options: Any) -> None:
        directory = Path(out)
        stale = []
        for name, schema in protocol_schemas().items():
            path = directory / name
            text = schema_text(schema)
            if check:
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    stale.append(str(path))
                continue
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {path}")
        if stale:
            raise CommandError(f"stale protocol schema: {', '.join(stale)}; run `manage.py chat_protocol_schema`")
        if check:
            self.stdout.write("protocol schema files are up to date")
