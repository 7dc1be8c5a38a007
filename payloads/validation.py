"""Payload validators: what checks a payload type's data before it becomes a card.

A type's schema is a pydantic model (the data comes back dumped, defaults filled in), a JSON-schema dict (checked
against its dialect's metaschema when the validator is built, then applied by the jsonschema library; the data comes
back unchanged), an object with `validate(data)`, or None (any JSON value). Errors name the JSON path (`$.a[0]`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as JsonSchemaViolation, best_match
from jsonschema.validators import validator_for
from pydantic import BaseModel


class SchemaError(ValueError):
    """The schema itself is malformed (it breaks its dialect's metaschema); the message names where."""


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


class JsonSchemaValidator:
    """A JSON-schema dict in the dialect its `$schema` names (2020-12 without one), applied by the jsonschema library.
    Raises SchemaError on build when the schema breaks the dialect's metaschema (an unknown type, a bad regex, ...)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        if not isinstance(schema, Mapping):
            raise SchemaError("$: a schema must be an object")
        as_dict = dict(schema)
        dialect = validator_for(as_dict, default=Draft202012Validator)
        # the metaschema's `format: regex` is checked too, so a pattern that does not compile is refused here
        problem = _first(dialect(dialect.META_SCHEMA, format_checker=dialect.FORMAT_CHECKER).iter_errors(as_dict))
        if problem is not None:
            raise SchemaError(problem)
        self.schema = schema
        self._validator = dialect(as_dict)  # `format` stays an annotation, as JSON Schema's default says

    def validate(self, data: Any) -> Any:
        """Return data unchanged or raise PayloadValidationError naming the most telling violation."""
        problem = _first(self._validator.iter_errors(data))
        if problem is not None:
            raise PayloadValidationError(problem)
        return data


def _first(errors: Iterable[JsonSchemaViolation]) -> str | None:
    """The most telling of the errors (jsonschema's `best_match`) as `path: reason`, or None when there is none."""
    best = best_match(errors)
    return None if best is None else f"{best.json_path}: {best.message}"


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
