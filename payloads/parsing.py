"""The blocks the stream filter cut out of an answer, decoded and validated: payloads, quick replies, buttons, errors.

A payload block is checked by its type's validator (payloads.validation); a suggestion block is a JSON array, or
the specs' line format (`a, b, c`; `label|action|handler|style|data`), read into the protocol's models
(chat.events.suggestions). A bad block or item becomes an error entry, never an exception.
"""
from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from chat.events.suggestions import (
    SUGGESTED_ACTIONS_MARKER,
    SUGGESTED_VALUES_MARKER,
    SuggestedAction,
    SuggestedValue,
    suggested_action_read,
    suggested_value_read,
)
from payloads.stream import Extracted
from payloads.validation import PayloadValidator

RAW_ERROR_CHARS = 200


@dataclass(slots=True)
class ParsedBlocks:
    """What the blocks of one message turned into; `errors` lists every dropped block or item."""

    payloads: list[tuple[str, Any]] = field(default_factory=list)
    suggested_values: list[SuggestedValue] = field(default_factory=list)
    suggested_actions: list[SuggestedAction] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)


_SUGGESTION_READERS: dict[str, tuple[Callable[[Any], BaseModel], str]] = {
    SUGGESTED_VALUES_MARKER: (suggested_value_read, "suggested_values"),
    SUGGESTED_ACTIONS_MARKER: (suggested_action_read, "suggested_actions"),
}


def parse_blocks(extracted: Iterable[Extracted], specs: Mapping[str, PayloadValidator]) -> ParsedBlocks:
    """Decode and validate each block (specs: marker -> validator); bad blocks/items become errors, never raises."""
    result = ParsedBlocks()

    def error(block: Extracted, message: str) -> None:
        raw = block.raw if len(block.raw) <= RAW_ERROR_CHARS else block.raw[:RAW_ERROR_CHARS] + "…"
        result.errors.append({"marker": block.marker, "error": message, "raw": raw})

    for block in extracted:
        try:
            data = _block_data(block)
        except ValueError as exc:
            error(block, str(exc))
            continue
        except RecursionError:
            error(block, "invalid JSON: nested too deeply")
            continue
        if block.marker in _SUGGESTION_READERS:
            read, attr = _SUGGESTION_READERS[block.marker]
            if not isinstance(data, list):
                error(block, "expected a JSON array")
                continue
            items: list[Any] = getattr(result, attr)
            for k, item in enumerate(data):
                try:
                    items.append(read(item))
                except ValidationError as exc:
                    error(block, f"item {k}: {_describe(exc)}")
            continue
        validator = specs.get(block.marker)
        if validator is None:
            error(block, "unknown marker")
            continue
        try:
            result.payloads.append((block.marker, validator.validate(data)))
        except Exception as exc:  # validators are page code: any failure drops only this block
            error(block, f"schema violation: {_describe(exc)}")
    return result


def _block_data(block: Extracted) -> Any:
    """The block's JSON value; a line-format suggestion block as the list of items it describes."""
    if not block.line:
        try:
            return json.loads(block.raw, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ValueError(f"invalid JSON: {exc}") from None
    if block.marker == SUGGESTED_VALUES_MARKER:
        items = parse_values_line(block.raw)
    elif block.marker == SUGGESTED_ACTIONS_MARKER:
        items = parse_actions_line(block.raw)
    else:
        raise ValueError("only suggestions have a line format")
    if not items:
        raise ValueError("no items in the line")
    return items


def parse_values_line(line: str) -> list[dict[str, str]]:
    """`Yes, No, Tell me more` -> chips whose label is their value (the specs' SUGGESTED_VALUES line)."""
    return [{"label": v, "value": v} for v in (part.strip() for part in line.split(",")) if v]


def parse_actions_line(line: str) -> list[dict[str, Any]]:
    """`label|action|handler[|style[|data_json]]` items separated by `;` (outside the JSON data) -> action dicts.

    Items with fewer than three fields are skipped (they fail validation as empty dicts and are reported);
    data that is not valid JSON is left out, as the specs' parser does."""
    out: list[dict[str, Any]] = []
    for item in _split_outside_json(line, ";"):
        parts = [p.strip() for p in item.split("|", 4)]
        if len(parts) < 3:
            out.append({"raw": item.strip()})  # invalid: parse_blocks reports it
            continue
        action: dict[str, Any] = {"label": parts[0], "action": parts[1], "handler": parts[2]}
        if len(parts) > 3 and parts[3]:
            action["style"] = parts[3]
        if len(parts) > 4 and parts[4]:
            with contextlib.suppress(ValueError, RecursionError):
                action["data"] = json.loads(parts[4], parse_constant=_reject_constant)
        out.append(action)
    return out


def _split_outside_json(text: str, sep: str) -> list[str]:
    """Split on `sep` except inside JSON brackets or strings (data_json may contain the separator)."""
    parts, depth, in_string, escape, start = [], 0, False, False, 0
    for k, c in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_string = False
        elif c == '"' and depth:
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth = max(0, depth - 1)
        elif c == sep and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _reject_constant(name: str) -> Any:
    # NaN/Infinity are not JSON: the browser's JSON.parse would choke on the complete event.
    raise ValueError(f"{name} is not valid JSON")


def _describe(exc: Exception) -> str:
    """A short one-line reason, compact for pydantic errors."""
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(map(str, e['loc'])) or '$'}: {e['msg']}" for e in exc.errors()[:3]]
        return "; ".join(parts)
    return str(exc)[:300] or type(exc).__name__
