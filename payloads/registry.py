"""PayloadRegistry: the payload types that exist (an instance, like AdminSite; tests build their own)."""
from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from chat.events.suggestions import SUGGESTION_MARKERS
from chat.registration import caller_origin
from payloads.spec import PayloadSpec
from payloads.stream import MARKER_RE
from payloads.validation import PayloadValidator


def assign_payload_id() -> str:
    """A short random id for one emitted payload (8 hex chars)."""
    return secrets.token_hex(4)


@dataclass(frozen=True)
class Refused:
    """A registration that was not added (taken type or marker, reserved marker); a system check reports it."""

    kind: Literal["type", "marker", "reserved"]
    name: str
    first: str  # where the holder was registered ("" for the reserved suggestion markers)
    second: str


class PayloadRegistry:
    """Payload specs by type and by marker; a taken type or marker is not added but reported (see `refused`)."""

    def __init__(self) -> None:
        self._by_type: dict[str, PayloadSpec] = {}
        self._by_marker: dict[str, PayloadSpec] = {}
        self._origins: dict[str, str] = {}
        self.refused: list[Refused] = []

    def register(self, spec: PayloadSpec, *, origin: str | None = None) -> PayloadSpec:
        """Add spec, unless its type or marker is taken or reserved: then it is recorded in `refused`, not added.

        The same registration site registering again (a module reloaded) replaces the earlier spec."""
        origin = origin or caller_origin(__file__)
        known = self._by_type.get(spec.type)
        if known is not None and known is not spec and self._origins[spec.type] == origin:
            self.unregister(spec.type)
        elif known is not None:
            if known is not spec:
                self.refused.append(Refused("type", spec.type, self._origins[spec.type], origin))
            return spec
        marker = spec.parse_marker
        if marker is not None:
            if marker in SUGGESTION_MARKERS:
                self.refused.append(Refused("reserved", marker, "", origin))
                return spec
            if marker in self._by_marker:
                holder = self._by_marker[marker]
                self.refused.append(Refused("marker", marker, self._origins[holder.type], origin))
                return spec
            self._by_marker[marker] = spec
        self._by_type[spec.type] = spec
        self._origins[spec.type] = origin
        return spec

    def payload(self, **fields: Any) -> Callable[[type[BaseModel]], type[BaseModel]]:
        """Decorator: register a pydantic model as the schema of PayloadSpec(**fields)."""

        def decorate(model: type[BaseModel]) -> type[BaseModel]:
            self.register(PayloadSpec(schema=model, **fields))
            return model

        return decorate

    def unregister(self, type_: str) -> None:
        """Remove a type (tests, reloads); KeyError if absent."""
        spec = self._by_type.pop(type_)
        self._origins.pop(type_, None)
        if spec.parse_marker is not None:
            self._by_marker.pop(spec.parse_marker, None)

    def origin(self, type_: str) -> str:
        """Where `type_` was registered (`file:line`), or ""."""
        return self._origins.get(type_, "")

    def get(self, type_: str) -> PayloadSpec | None:
        """The spec for a type, or None."""
        return self._by_type.get(type_)

    def by_marker(self, marker: str) -> PayloadSpec | None:
        """The spec whose parse_marker is `marker`, or None."""
        return self._by_marker.get(marker)

    def all(self) -> list[PayloadSpec]:
        """Every spec, in registration order."""
        return list(self._by_type.values())

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

    def __contains__(self, type_: object) -> bool:
        return type_ in self._by_type

    def __iter__(self) -> Iterator[PayloadSpec]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self._by_type)


registry = PayloadRegistry()
