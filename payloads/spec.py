"""PayloadSpec: what one custom payload type is, how the model emits it, how it is checked and summarised."""
from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from django.utils.functional import Promise
from pydantic import BaseModel

from chat.infra.registration import title_shown
from payloads.validation import PayloadValidator, make_validator

SUMMARY_MAX_CHARS = 120


@dataclass(frozen=True, kw_only=True, eq=False)
class PayloadSpec:
    """A custom payload type. `llm` types are written by the model after `parse_marker`; `tool` types come from ToolResult."""

    type: str
    source: Literal["llm", "tool"] = "llm"
    parse_marker: str | None = None
    description: str = ""
    llm_instructions: str = ""
    schema: Mapping[str, Any] | builtins.type[BaseModel] | None = None  # (`type` is a field here)
    summarize: Callable[[Any], str] | None = None
    is_global: bool = False
    example: dict[str, Any] | None = None
    # What people read for the type ("Stream ideas"; a lazy translation is translated where it is shown); "" derives
    # it from the type ("stream_suggestions" -> "Stream suggestions")
    title: str | Promise = ""

    def display_title(self) -> str:
        """The type's title in the active language (its own, else derived from the type)."""
        return title_shown(self.title, self.type)

    @cached_property
    def _validator(self) -> PayloadValidator:
        return make_validator(self.schema)

    def validator(self) -> PayloadValidator:
        """The validator for this type's data; raises SchemaError if the schema does not build."""
        return self._validator

    def json_schema(self) -> dict[str, Any] | None:
        """The schema as a JSON-schema dict (pydantic models converted, titles dropped), or None."""
        if self.schema is None:
            return None
        if isinstance(self.schema, type) and issubclass(self.schema, BaseModel):
            return dict(_drop_titles(self.schema.model_json_schema()))
        return dict(self.schema)

    def summary(self, data: Any) -> str:
        """A one-line summary (<= 120 chars) for manifests and lists; falls back to the default on error."""
        if self.summarize is not None:
            try:
                text = str(self.summarize(data)).strip()
            except Exception:  # page code; a broken summariser must not break the turn
                text = ""
            if text:
                return _clip(text, SUMMARY_MAX_CHARS)
        strings = ", ".join(_strings(data, SUMMARY_MAX_CHARS))
        title = self.display_title()
        return _clip(f"{title}: {strings}" if strings else title, SUMMARY_MAX_CHARS)

    def instructions(self) -> str:
        """The system-prompt text for this type: its title, marker, when to use it, JSON shape and example."""
        head = f'### {self.type} (title: "{self.display_title()}")' + (f" - {self.description}" if self.description else "")
        if self.source == "tool":
            return f"{head}\nProduced by tools and shown to the user as a card; never write it yourself."
        marker = self.parse_marker or "?"
        lines = [head]
        if self.llm_instructions:
            lines.append(self.llm_instructions.strip())
        lines.append(
            f"To emit it, write `{marker}` followed by exactly one JSON value (plain or in a ```json fence). "
            "The block is hidden from the user and shown as a card; do not repeat its content in prose."
        )
        schema = self.json_schema()
        if schema:
            lines.append("JSON schema: " + json.dumps(schema, separators=(",", ":"), ensure_ascii=False))
        if self.example is not None:
            lines.append(f"Example:\n{marker} {json.dumps(self.example, ensure_ascii=False)}")
        return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _strings(data: Any, budget: int) -> list[str]:
    """String leaves of data in document order, until about `budget` characters are collected."""
    found: list[str] = []
    stack: list[Any] = [data]
    while stack and budget > 0:
        item = stack.pop()
        if isinstance(item, str):
            if item.strip():
                found.append(item.strip())
                budget -= len(item) + 2
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return found


def _drop_titles(schema: Any) -> Any:
    """Remove pydantic's auto `title` annotations (noise for the model), keeping properties named title."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: _drop_titles(sub) for name, sub in value.items()}
        elif key in ("anyOf", "allOf", "oneOf", "prefixItems"):
            out[key] = [_drop_titles(sub) for sub in value]
        elif key in ("items", "additionalProperties"):
            out[key] = _drop_titles(value)
        else:
            out[key] = value
    return out
