"""Marker blocks in model text: a streaming filter that hides them, a parser that validates them.

A block is `MARKER:` + optional whitespace + optional ```lang fence (lang lowercase) + one JSON
object/array, whose end is found by string-aware bracket matching (+ the closing fence). In a fenced
block a backtick outside a string also ends broken JSON. A block still open when the stream ends is
extracted (trailing whitespace trimmed) and never shown. No Django here: this runs per token.
"""
from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from chat.events.suggestions import (
    SUGGESTED_ACTIONS_MARKER,
    SUGGESTED_VALUES_MARKER,
    SuggestedAction,
    SuggestedValue,
    suggested_action_read,
    suggested_value_read,
)

# Uppercase only, so a marker can never start inside the whitespace, backticks or lowercase
# fence language that may follow another marker (keeps the scanner one-pass and split-proof).
MARKER_RE = re.compile(r"[A-Z][A-Z0-9_]*:")
RAW_ERROR_CHARS = 200

# ---- streaming filter --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Extracted:
    """One block cut out of the text: its marker and the raw JSON text (fences stripped), or with `line`
    the rest of the marker's line (the line formats `a, b, c` and `label|action|handler|style|data`)."""

    marker: str
    raw: str
    line: bool = False


_TEXT, _AFTER_MARKER, _IN_JSON, _AFTER_JSON, _IN_LINE = range(5)
# Characters that matter while scanning JSON: outside strings / inside strings.
_JSON_SIGNIFICANT = re.compile(r'[{}\[\]"`]')
_STRING_SIGNIFICANT = re.compile(r'["\\]')


class MarkerStreamFilter:
    """Hides marker blocks from streamed text; feed() outputs + close() == text minus blocks, for any split."""

    def __init__(self, markers: Iterable[str], line_markers: Iterable[str] = ()) -> None:
        self.markers: frozenset[str] = frozenset(markers)
        # Markers whose block may also be the rest of their line instead of JSON (the suggestion markers).
        self.line_markers: frozenset[str] = frozenset(line_markers) & self.markers
        for marker in self.markers:
            if not MARKER_RE.fullmatch(marker):
                raise ValueError(f"marker {marker!r} must be UPPER_SNAKE ending with ':'")
        self.extracted: list[Extracted] = []
        # Longest first so the regex prefers the longest marker at a given start.
        ordered = sorted(self.markers, key=len, reverse=True)
        self._search = re.compile("|".join(map(re.escape, ordered))).search if ordered else None
        self._prefixes = {m[:k] for m in self.markers for k in range(1, len(m))}
        self._prefix_chars = {c for m in self.markers for c in m}
        self._max_prefix = max((len(m) - 1 for m in self.markers), default=0)
        self._state = _TEXT
        self._held = ""  # TEXT: a possible marker prefix; otherwise text to release if no block
        self._marker = ""
        self._sub = ""  # step inside _AFTER_MARKER: ws | ticks | lang | fws
        self._newline = False  # _AFTER_MARKER: a newline followed the marker (a line block must start on its line)
        self._ticks = 0
        self._fenced = False
        self._raw: list[str] = []
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._closed = False

    def feed(self, delta: str) -> str:
        """Consume a delta; return the text now known to lie outside any block."""
        if self._closed:
            raise RuntimeError("feed() after close()")
        if (self._state == _TEXT and not self._held and delta and delta[-1] not in self._prefix_chars
                and (self._search is None or self._search(delta) is None)):
            return delta  # prose: no marker in it and none beginning at its end (most tokens end here)
        out: list[str] = []
        i, n = 0, len(delta)
        while i < n:
            if self._state == _TEXT:
                i = self._scan_text(delta, i, out)
            elif self._state == _AFTER_MARKER:
                i = self._scan_opener(delta, i, out)
            elif self._state == _IN_JSON:
                i = self._scan_json(delta, i)
            elif self._state == _IN_LINE:
                i = self._scan_line(delta, i)
            else:
                i = self._scan_closer(delta, i, out)
        return "".join(out)

    def close(self) -> str:
        """End of stream: release held text; an unterminated block is extracted and stays hidden."""
        if self._closed:
            return ""
        self._closed = True
        if self._state == _IN_JSON:
            self._finish_block("".join(self._raw).rstrip())
            return ""
        if self._state == _IN_LINE:
            self._finish_block("".join(self._raw).strip(), line=True)
            return ""
        held, self._held = self._held, ""
        return held

    # -- states ---------------------------------------------------------------------------------

    def _scan_text(self, s: str, i: int, out: list[str]) -> int:
        text = self._held + s[i:] if self._held else s[i:]
        self._held = ""
        hit = self._search(text) if self._search else None
        if hit:
            out.append(text[: hit.start()])
            self._state, self._sub, self._ticks, self._newline = _AFTER_MARKER, "ws", 0, False
            self._marker = self._held = hit.group()
            return len(s) - (len(text) - hit.end())
        keep = self._partial_marker_len(text)
        out.append(text[: len(text) - keep])
        self._held = text[len(text) - keep :]
        return len(s)

    def _partial_marker_len(self, text: str) -> int:
        # Fast path: prose rarely ends in a character that occurs in a marker.
        if not text or text[-1] not in self._prefix_chars:
            return 0
        for k in range(min(self._max_prefix, len(text)), 0, -1):
            if text[-k:] in self._prefixes:
                return k
        return 0

    def _scan_opener(self, s: str, i: int, out: list[str]) -> int:
        """Between marker and JSON: whitespace, then maybe ```lang and whitespace, then { or [."""
        n = len(s)
        while i < n:
            c = s[i]
            sub = self._sub
            if sub == "ticks":
                if c == "`" and self._ticks < 3:
                    self._ticks += 1
                elif self._ticks == 3:
                    self._sub = "lang"
                    continue
                else:
                    return self._release(i, out)
            elif sub == "lang" and "a" <= c <= "z":
                pass
            elif c.isspace() and sub != "ticks":
                if sub == "lang":
                    self._sub = "fws"
                elif c == "\n":
                    self._newline = True
            elif c in "{[":
                self._start_json(fenced=sub != "ws")
                return i
            elif c == "`" and sub == "ws":
                self._sub, self._ticks = "ticks", 1
            elif sub == "ws" and not self._newline and self._marker in self.line_markers:
                self._state, self._held, self._raw = _IN_LINE, "", []
                return i
            else:
                return self._release(i, out)
            self._held += c
            i += 1
        return i

    def _start_json(self, *, fenced: bool) -> None:
        self._state, self._fenced, self._held = _IN_JSON, fenced, ""
        self._raw, self._depth, self._in_string, self._escape = [], 0, False, False

    def _scan_json(self, s: str, i: int) -> int:
        """String-aware bracket matching; jumps between significant characters only."""
        start, n = i, len(s)
        if self._escape:
            self._escape, i = False, i + 1
        while i < n:
            if self._in_string:
                m = _STRING_SIGNIFICANT.search(s, i)
                if m is None:
                    i = n
                    break
                i = m.end()
                if m.group() == '"':
                    self._in_string = False
                elif i < n:
                    i += 1  # the escaped character, whatever it is
                else:
                    self._escape = True
                continue
            m = _JSON_SIGNIFICANT.search(s, i)
            if m is None:
                i = n
                break
            c, i = m.group(), m.end()
            if c == '"':
                self._in_string = True
            elif c in "{[":
                self._depth += 1
            elif c in "}]":
                self._depth -= 1
                if self._depth == 0:
                    self._raw.append(s[start:i])
                    self._finish_block("".join(self._raw))
                    self._state = _AFTER_JSON if self._fenced else _TEXT
                    self._ticks, self._held = 0, ""
                    return i
            elif self._fenced:
                # A backtick outside a string cannot be JSON: the fence closes a broken block.
                self._raw.append(s[start : i - 1])
                self._finish_block("".join(self._raw).rstrip())
                self._state, self._ticks, self._held = _AFTER_JSON, 0, ""
                return i - 1
        self._raw.append(s[start:i])
        return i

    def _scan_line(self, s: str, i: int) -> int:
        """A line-format block: everything up to (not including) the end of its line."""
        end = s.find("\n", i)
        if end < 0:
            self._raw.append(s[i:])
            return len(s)
        self._raw.append(s[i:end])
        self._finish_block("".join(self._raw).strip(), line=True)
        self._state = _TEXT
        return end

    def _scan_closer(self, s: str, i: int, out: list[str]) -> int:
        """After fenced JSON: whitespace then ``` ends the block; anything else is prose again."""
        n = len(s)
        while i < n:
            c = s[i]
            if c == "`":
                self._ticks += 1
                if self._ticks == 3:
                    self._state, self._held, self._ticks = _TEXT, "", 0
                    return i + 1
            elif not (c.isspace() and self._ticks == 0):
                return self._release(i, out)
            self._held += c
            i += 1
        return i

    def _release(self, i: int, out: list[str]) -> int:
        """Not (or no longer) a block: what was held is ordinary text; rescan from i as text."""
        out.append(self._held)
        self._state, self._held = _TEXT, ""
        return i

    def _finish_block(self, raw: str, *, line: bool = False) -> None:
        self.extracted.append(Extracted(self._marker, raw, line))
        self._raw = []


def extract_blocks(text: str, markers: Iterable[str], line_markers: Iterable[str] = ()) -> tuple[str, list[Extracted]]:
    """One-shot form of MarkerStreamFilter: (text without blocks, blocks)."""
    f = MarkerStreamFilter(markers, line_markers)
    visible = f.feed(text) + f.close()
    return visible, f.extracted


# ---- validators --------------------------------------------------------------------------------


class SchemaError(ValueError):
    """The schema itself is malformed or uses an unsupported keyword."""


class PayloadValidationError(ValueError):
    """The data violates the schema; the message names the JSON path."""


@runtime_checkable
class PayloadValidator(Protocol):
    """validate(data) returns the (possibly normalised) data or raises on a violation."""

    def validate(self, data: Any) -> Any: ...


class AnyValidator:
    """Accepts any JSON value unchanged (payload types without a schema)."""

    def validate(self, data: Any) -> Any:
        """Return data as is."""
        return data


class PydanticValidator:
    """Validates with a pydantic model; returns its JSON-mode dump (defaults filled in)."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model

    def validate(self, data: Any) -> Any:
        """Return model_validate(data) dumped to JSON-compatible data; raises ValidationError."""
        return self.model.model_validate(data).model_dump(mode="json")


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength")
_BOUNDS = ("minimum", "maximum")
_SUPPORTED = {"type", "properties", "required", "items", "enum", "const", "additionalProperties",
              "anyOf", "pattern", *_COUNTS, *_BOUNDS}
# Annotations carry no constraint; anything else unknown is refused so a schema never
# silently validates less than its author meant.
_ANNOTATIONS = {"title", "description", "default", "examples", "example", "$schema", "$id",
                "$comment", "format", "deprecated", "readOnly", "writeOnly"}


class JsonSchemaValidator:
    """A JSON-schema subset: type, properties, required, items, enum, const, additionalProperties,
    anyOf, pattern, min/maxItems, min/maxLength, minimum/maximum. Raises SchemaError on build."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        _check_schema(schema, "$")
        self.schema = schema

    def validate(self, data: Any) -> Any:
        """Return data unchanged or raise PayloadValidationError naming the first violation."""
        _validate(self.schema, data, "$")
        return data


def _check_schema(schema: Any, path: str) -> None:
    if not isinstance(schema, Mapping):
        raise SchemaError(f"{path}: schema must be an object")
    unknown = set(schema) - _SUPPORTED - _ANNOTATIONS
    if unknown:
        raise SchemaError(f"{path}: unsupported keyword(s) {sorted(unknown)}")
    types = schema.get("type")
    if types is not None:
        for t in [types] if isinstance(types, str) else types:
            if t not in _TYPES:
                raise SchemaError(f"{path}: unknown type {t!r}")
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        raise SchemaError(f"{path}.properties must be an object")
    for name, sub in props.items():
        _check_schema(sub, f"{path}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise SchemaError(f"{path}.required must be a list of strings")
    if "items" in schema:
        _check_schema(schema["items"], f"{path}.items")
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool):
        _check_schema(extra, f"{path}.additionalProperties")
    if "enum" in schema and not isinstance(schema["enum"], list):
        raise SchemaError(f"{path}.enum must be a list")
    for key in _COUNTS:
        if key in schema and not (type(schema[key]) is int and schema[key] >= 0):
            raise SchemaError(f"{path}.{key} must be a non-negative integer")
    for key in _BOUNDS:
        if key in schema and not _TYPES["number"](schema[key]):
            raise SchemaError(f"{path}.{key} must be a number")
    if "anyOf" in schema:
        if not isinstance(schema["anyOf"], list) or not schema["anyOf"]:
            raise SchemaError(f"{path}.anyOf must be a non-empty list")
        for k, sub in enumerate(schema["anyOf"]):
            _check_schema(sub, f"{path}.anyOf[{k}]")
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except (re.error, TypeError) as exc:
            raise SchemaError(f"{path}.pattern: {exc}") from exc


def _validate(schema: Mapping[str, Any], value: Any, path: str) -> None:
    def fail(msg: str) -> None:
        raise PayloadValidationError(f"{path}: {msg}")

    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in names):
            fail(f"expected {' or '.join(names)}, got {type(value).__name__}")
    if "enum" in schema and not any(_json_equal(value, e) for e in schema["enum"]):
        fail(f"{value!r} is not one of {schema['enum']!r}")
    if "const" in schema and not _json_equal(value, schema["const"]):
        fail(f"must be {schema['const']!r}")
    if "anyOf" in schema:
        for sub in schema["anyOf"]:
            try:
                _validate(sub, value, path)
                break
            except PayloadValidationError:
                continue
        else:
            fail("matches none of anyOf")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            fail(f"shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            fail(f"longer than {schema['maxLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            fail(f"does not match {schema['pattern']!r}")
    elif _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            fail(f"less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            fail(f"greater than {schema['maximum']}")
    elif isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            fail(f"fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            fail(f"more than {schema['maxItems']} items")
        if "items" in schema:
            for k, item in enumerate(value):
                _validate(schema["items"], item, f"{path}[{k}]")
    elif isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                fail(f"missing required property {name!r}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                _validate(props[name], item, f"{path}.{name}")
            elif extra is False:
                fail(f"unexpected property {name!r}")
            elif isinstance(extra, Mapping):
                _validate(extra, item, f"{path}.{name}")


def _json_equal(a: Any, b: Any) -> bool:
    # JSON has no bool/number overlap: True must not equal 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and bool(a == b)
    return bool(a == b)


def make_validator(schema: Mapping[str, Any] | type[BaseModel] | PayloadValidator | None) -> PayloadValidator:
    """A validator for a JSON-schema dict, a pydantic model class, an existing validator, or None (any)."""
    if schema is None:
        return AnyValidator()
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return PydanticValidator(schema)
    if isinstance(schema, Mapping):
        return JsonSchemaValidator(schema)
    if isinstance(schema, PayloadValidator):
        return schema
    raise SchemaError(f"cannot build a validator from {type(schema).__name__}")


# ---- parsing extracted blocks ------------------------------------------------------------------


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
