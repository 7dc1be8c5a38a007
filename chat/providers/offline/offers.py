"""What a page offers the model and what it reports, as the offline model understands them: payload types (from
their instructions: marker, example, schema, chips), client and server actions, and the error the page ran into."""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chat.infra.registration import title_shown
from chat.providers.offline.words import words


@dataclass
class PayloadOffer:
    """A payload type the page lets the model emit, as its instructions describe it."""

    type: str
    description: str
    marker: str
    example: Any
    instructions: str = ""
    schema: dict[str, Any] = field(default_factory=dict)
    title: str = ""  # what people read for the type (the prompt's `(title: "...")`), else derived from it

    @property
    def shown(self) -> str:
        """The type's title, to say to the user (never its name)."""
        return self.title or title_shown("", self.type)

    def own_words(self) -> set[str]:
        return words(f"{self.type} {self.description} {self.marker}")

    def values_after(self, cue: str) -> list[dict[str, Any]]:
        """The first `SUGGESTED_VALUES: [...]` the instructions give after `cue` (case-insensitive), or []."""
        at = self.instructions.lower().find(cue.lower())
        if at < 0:
            return []
        m = re.search(r"SUGGESTED_VALUES: (\[.*?\])(?=\.|\s|$)", self.instructions[at:])
        if not m:
            return []
        try:
            values = json.loads(m.group(1))
        except ValueError:
            return []
        return [v for v in values if isinstance(v, dict) and "label" in v and "value" in v]

    def enum(self, name: str) -> list[str]:
        """The allowed values of property `name` anywhere in the schema (e.g. a channel's `type`)."""
        found: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                props = node.get("properties")
                if isinstance(props, dict) and isinstance(props.get(name), dict) and "enum" in props[name]:
                    found.extend(str(v) for v in props[name]["enum"] if str(v) not in found)
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(self.schema)
        return found


@dataclass
class ActionOffer:
    name: str
    description: str
    handler: str
    params: list[str] = field(default_factory=list)


@dataclass
class Troubleshooting:
    """The error the page says the user ran into (the prompt's TROUBLESHOOTING section)."""

    message: str
    code: str = ""
    context: str = ""


def parse_payloads(instructions: str) -> list[PayloadOffer]:
    """Payload types the text offers (each a `### type` block, up to the next section), with marker, example, schema."""
    offers: list[PayloadOffer] = []
    for block in re.split(r"\n(?=### )", instructions):
        block = re.split(r"\n#{1,2} ", block)[0].rstrip()  # a payload's block ends at the next section
        head = re.match(r'### (\w+)(?: \(title: "([^"]*)"\))?(?: - (.*))?', block)
        example = re.search(r"Example:\n([A-Z][A-Z0-9_]*:)\s*(.+)", block)
        if not (head and example):
            continue
        try:
            data = json.loads(example.group(2))
        except ValueError:
            continue
        schema: dict[str, Any] = {}
        sm = re.search(r"JSON schema: (.+)", block)
        if sm:
            try:
                schema = json.loads(sm.group(1))
            except ValueError:
                schema = {}
        offers.append(PayloadOffer(head.group(1), head.group(3) or "", example.group(1), data, block, schema, head.group(2) or ""))
    return offers


def actions_offered(handler: str, actions: Sequence[tuple[str, str, Sequence[str]]]) -> list[ActionOffer]:
    """The page's actions of one handler ("client" or "server") from the prompt's (name, description, parameters)."""
    return [ActionOffer(name, description, handler, list(params)) for name, description, params in actions]


