"""Payload validators: JSON-schema dicts (the jsonschema library), pydantic models, the factory."""
from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel

from payloads.validation import JsonSchemaValidator, PayloadValidationError, PydanticValidator, SchemaError, make_validator


def test_json_schema_keywords() -> None:
    v = JsonSchemaValidator({
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 0, "maximum": 3},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 3},
                     "minItems": 1, "maxItems": 2},
            "kind": {"enum": ["a", "b"]},
            "opt": {"type": ["string", "null"]},
            "either": {"anyOf": [{"type": "boolean"}, {"type": "string", "pattern": "^x"}]},
        },
        "additionalProperties": {"type": "number"},
    })
    good = {"n": 2.0, "tags": ["ab"], "kind": "a", "opt": None, "either": "xy", "score": 1.5}
    assert v.validate(good) is good
    bad_cases = [{"n": True}, {"n": 4}, {"tags": []}, {"tags": ["a", "b", "c"]}, {"tags": [""]},
                 {"tags": ["abcd"]}, {"kind": "c"}, {"opt": 1}, {"either": "y"}, {"score": "x"}, []]
    for bad in bad_cases:
        with pytest.raises(PayloadValidationError):
            v.validate(bad)


@pytest.mark.parametrize("schema", [{"type": "strange"}, {"oneOf": []}, {"properties": []}, {"required": "a"},
                                    {"minItems": -1}, {"items": 3}, {"pattern": "("}, []])
def test_schema_that_does_not_build(schema: Any) -> None:
    with pytest.raises(SchemaError):
        JsonSchemaValidator(schema)


def test_errors_name_the_path_and_the_reason() -> None:
    v = JsonSchemaValidator({"type": "object", "required": ["tags"],
                             "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 3}}}})
    with pytest.raises(PayloadValidationError, match=re.escape("$.tags[1]: 'abcd' is too long")):
        v.validate({"tags": ["ab", "abcd"]})
    with pytest.raises(PayloadValidationError, match=re.escape("$: 'tags' is a required property")):
        v.validate({})
    with pytest.raises(SchemaError, match=re.escape("$.properties.tags.items.maxLength: -1 is less than the minimum of 0")):
        JsonSchemaValidator({"properties": {"tags": {"items": {"maxLength": -1}}}})


def test_the_whole_dialect_applies() -> None:
    """Keywords a hand-written subset refused ($defs/$ref, oneOf, const) are checked, and a schema may name its draft."""
    v = JsonSchemaValidator({
        "$defs": {"tag": {"type": "string", "maxLength": 3}},
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}}, "kind": {"const": "k"}},
        "oneOf": [{"required": ["tags"]}, {"required": ["kind"]}],
    })
    assert v.validate({"tags": ["a"]}) == {"tags": ["a"]}
    for bad in [{"tags": ["abcd"]}, {"kind": "x"}, {"tags": [], "kind": "k"}, {}]:
        with pytest.raises(PayloadValidationError):
            v.validate(bad)
    draft7 = JsonSchemaValidator({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]})
    assert draft7.validate(["a", 1]) == ["a", 1]  # draft 7's tuple form of `items`
    with pytest.raises(PayloadValidationError):
        draft7.validate([1])


def test_pydantic_and_factory_validators() -> None:
    class Model(BaseModel):
        name: str
        size: int = 1

    v = make_validator(Model)
    assert isinstance(v, PydanticValidator)
    assert v.validate({"name": "x"}) == {"name": "x", "size": 1}
    with pytest.raises(ValueError):
        v.validate({"size": "big"})
    assert make_validator(None).validate([1]) == [1]
    assert isinstance(make_validator({"type": "object"}), JsonSchemaValidator)
    with pytest.raises(SchemaError):
        make_validator(42)  # type: ignore[arg-type]
