"""PayloadRegistry: the payload types that exist (an instance, like AdminSite; tests build their own; base: chat.infra.registration)."""
from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel

from chat.events.suggestions import SUGGESTION_MARKERS
from chat.infra.registration import Duplicate, Registry
from payloads.spec import PayloadSpec
from payloads.stream import MARKER_RE
from payloads.validation import PayloadValidator


def assign_payload_id() -> str:
    """A short random id for one emitted payload (8 hex chars)."""
    return secrets.token_hex(4)


Refused = Duplicate  # the record's former name: kind "type", "marker" or "reserved"


class PayloadRegistry(Registry[PayloadSpec]):
    """Payload specs by type and by marker; a taken type or marker is not added but recorded in `duplicates` (kind
    "type" or "marker"), nor is a marker reserved for the suggestions (kind "reserved"); checks report them."""

    key_field = "type"

    def __init__(self) -> None:
        super().__init__()
        self._by_marker: dict[str, PayloadSpec] = {}

    @property
    def refused(self) -> list[Duplicate]:
        """The registrations not added (`duplicates`, by its former name)."""
        return self.duplicates

    def _admit(self, spec: PayloadSpec, origin: str) -> bool:
        """A free type is added unless its marker is reserved or taken (recorded in `duplicates`)."""
        marker = spec.parse_marker
        if marker is None:
            return True
        if marker in SUGGESTION_MARKERS:
            self.duplicates.append(Duplicate(marker, "", origin, "reserved"))
            return False
        if marker in self._by_marker:
            self.duplicates.append(Duplicate(marker, self._origins[self._by_marker[marker].type], origin, "marker"))
            return False
        self._by_marker[marker] = spec
        return True

    def payload(self, **fields: Any) -> Callable[[type[BaseModel]], type[BaseModel]]:
        """Decorator: register a pydantic model as the schema of PayloadSpec(**fields)."""

        def decorate(model: type[BaseModel]) -> type[BaseModel]:
            self.register(PayloadSpec(schema=model, **fields))
            return model

        return decorate

    def unregister(self, type_: str) -> None:
        """Remove a type and its marker (tests, reloads); nothing happens when it is not registered."""
        spec = self._specs.get(type_)
        super().unregister(type_)
        if spec is not None and spec.parse_marker is not None:
            self._by_marker.pop(spec.parse_marker, None)

    def get(self, type_: str) -> PayloadSpec | None:
        """The spec for a type, or None."""
        return self._specs.get(type_)

    def by_marker(self, marker: str) -> PayloadSpec | None:
        """The spec whose parse_marker is `marker`, or None."""
        return self._by_marker.get(marker)

    def all(self) -> list[PayloadSpec]:
        """Every spec, in registration order."""
        return list(self._specs.values())

    def markers(self, types: Iterable[str] | None = None) -> set[str]:
        """Markers to hide from the stream: the suggestion markers plus those of llm types (all or `types`)."""
        specs = self.all() if types is None else [s for t in types if (s := self.get(t))]
        return set(SUGGESTION_MARKERS) | {s.parse_marker for s in specs if s.source == "llm" and s.parse_marker}

    def validators(self, types: Iterable[str] | None = None) -> dict[str, PayloadValidator]:
        """marker -> validator for parse_blocks (all llm types or only `types`)."""
        specs = self.all() if types is None else [s for t in types if (s := self.get(t))]
        return {s.parse_marker: s.validator() for s in specs if s.source == "llm" and s.parse_marker}

    def check(self) -> list[str]:
        """Configuration problems, one message each (empty when healthy); meant for a Django system check."""
        problems: list[str] = []
        for spec in self.all():
            name = f"payload {spec.type!r}"
            if spec.source not in ("llm", "tool"):
                problems.append(f"{name}: source must be 'llm' or 'tool', not {spec.source!r}")
            if spec.source == "llm" and not spec.parse_marker:
                problems.append(f"{name}: an llm payload needs a parse_marker")
            if spec.parse_marker and not MARKER_RE.fullmatch(spec.parse_marker):
                problems.append(f"{name}: marker {spec.parse_marker!r} must be UPPER_SNAKE ending with ':'")
            if spec.summarize is not None and not callable(spec.summarize):
                problems.append(f"{name}: summarize must be callable")
            try:
                validator = spec.validator()
                spec.json_schema()
            except Exception as exc:  # any failure to build is a configuration problem to report
                problems.append(f"{name}: schema does not build: {exc}")
                continue
            if spec.example is not None:
                try:
                    validator.validate(spec.example)
                except Exception as exc:
                    problems.append(f"{name}: example does not match the schema: {str(exc)[:200]}")
        return problems


registry = PayloadRegistry()
