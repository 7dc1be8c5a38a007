"""`manage.py chat_api_schema [--check]`: write docs/api/openapi.yaml (OpenAPI 3.1) and docs/protocol/asyncapi.yaml (AsyncAPI 3)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse
from django.utils import translation

from chat.api.openapi import openapi_document
from chat.events.asyncapi import asyncapi_document


def openapi_text() -> str:
    """docs/api/openapi.yaml's exact text, from this project's URLconf."""
    from drf_spectacular.renderers import OpenApiYamlRenderer

    return OpenApiYamlRenderer().render(openapi_document(), renderer_context={}).decode()


def asyncapi_text() -> str:
    """docs/protocol/asyncapi.yaml's exact text, with the API where this project mounts it."""
    api_prefix = reverse("pagechat:root")
    return yaml.safe_dump(asyncapi_document(api_prefix=api_prefix), sort_keys=False, allow_unicode=True, width=120)


class Command(BaseCommand):
    help = "Write the OpenAPI document of the REST/SSE API and the AsyncAPI document of the streams (--check: fail if stale)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--openapi", default="docs/api/openapi.yaml", help="the OpenAPI file (default: docs/api/openapi.yaml)")
        parser.add_argument("--asyncapi", default="docs/protocol/asyncapi.yaml", help="the AsyncAPI file (default: docs/protocol/asyncapi.yaml)")
        parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is missing or stale")

    def handle(self, *args: Any, openapi: str, asyncapi: str, check: bool, **options: Any) -> None:
        stale = []
        with translation.override("en"):  # the committed descriptions are English whatever language is active
            texts = ((Path(openapi), openapi_text()), (Path(asyncapi), asyncapi_text()))
        for path, text in texts:
            if check:
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    stale.append(str(path))
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {path}")
        if stale:
            raise CommandError(f"stale API description: {', '.join(stale)}; run `manage.py chat_api_schema`")
        if check:
            self.stdout.write("API descriptions are up to date")
