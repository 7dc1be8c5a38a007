"""`manage.py chat_sources_rebuild [name ...]`: create the sources' index tables and index every object again."""
from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools.sources.index import source_rebuild
from tools.sources.registry import registry


class Command(BaseCommand):
    help = "Rebuild the search index of every source (or of the named ones): after bulk writes, a backend change, a restore."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help="Source names (default: all).")
        parser.add_argument("--database", default="default", help="The database alias (default: default).")

    def handle(self, *args: Any, names: list[str], database: str, **options: Any) -> None:
        unknown = [n for n in names if registry.get(n) is None]
        if unknown:
            raise CommandError(f"no source named {', '.join(unknown)}; known: {', '.join(s.name for s in registry) or '(none)'}")
        for source in registry:
            if names and source.name not in names:
                continue
            started = time.perf_counter()
            count = source_rebuild(source, using=database)
            self.stdout.write(f"{source.name}: {count} objects indexed in {time.perf_counter() - started:.2f}s")
