"""PayloadSpec (validator, summary, instructions) and PayloadRegistry (lookups, duplicates, check)."""
from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel

from payloads.registry import PayloadRegistry, assign_payload_id, registry
from payloads.spec import SUMMARY_MAX_CHARS, PayloadSpec
from payloads.validation import JsonSchemaValidator, PydanticValidator, SchemaError

PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"proposed_changes": {"type": "object"}, "reasoning": {"type": "string"}},
    "required": ["proposed_changes"],
}
PROPOSAL_EXAMPLE = {"proposed_changes": {"stream_name": "Oncology Monitor"}, "reasoning": "Because."}


def proposal(**overrides: Any) -> PayloadSpec:
    fields: dict[str, Any] = {
        "type": "schema_proposal",
        "parse_marker": "SCHEMA_PROPOSAL:",
        "description": "Proposed schema changes",
        "llm_instructions": "Use when the user asks to change the stream.",
        "schema": PROPOSAL_SCHEMA,
        "example": PROPOSAL_EXAMPLE,
    }
    return PayloadSpec(**{**fields, **overrides})


class StreamForm(BaseModel):
    title: str
    topics: list[str] = []


# ---- registry ----------------------------------------------------------------------------------


def test_register_and_look_up() -> None:
    reg = PayloadRegistry()
    spec = reg.register(proposal())
    tool_spec = reg.register(PayloadSpec(type="pubmed_article", source="tool", description="Article card"))
    assert reg.get("schema_proposal") is spec
    assert reg.get("missing") is None
    assert reg.by_marker("SCHEMA_PROPOSAL:") is spec
    assert reg.by_marker("NOPE:") is None
    assert reg.all() == [spec, tool_spec]
    assert list(reg) == [spec, tool_spec]
    assert "schema_proposal" in reg and "missing" not in reg
    assert len(reg) == 2


def test_taken_types_and_markers_are_not_added_but_recorded() -> None:
    reg = PayloadRegistry()
    reg.register(proposal())
    reg.register(proposal(parse_marker="OTHER:"))
    reg.register(proposal(type="other"))
    reg.register(proposal(type="values", parse_marker="SUGGESTED_VALUES:"))
    assert len(reg) == 1 and reg.by_marker("OTHER:") is None
    assert [(r.kind, r.name) for r in reg.refused] == [
        ("type", "schema_proposal"), ("marker", "SCHEMA_PROPOSAL:"), ("reserved", "SUGGESTED_VALUES:")]
    assert all(r.second.startswith(__file__) for r in reg.refused) and reg.refused[0].first.startswith(__file__)


def test_decorator_registers_a_pydantic_schema() -> None:
    reg = PayloadRegistry()

    @reg.payload(type="research_stream_form", parse_marker="RESEARCH_STREAM_FORM:", description="A form")
    class Form(StreamForm):
        pass

    spec = reg.get("research_stream_form")
    assert spec is not None and spec.schema is Form
    assert isinstance(spec.validator(), PydanticValidator)


def test_unregister() -> None:
    reg = PayloadRegistry()
    reg.register(proposal())
    reg.unregister("schema_proposal")
    assert "schema_proposal" not in reg and reg.by_marker("SCHEMA_PROPOSAL:") is None
    reg.register(proposal())  # marker is free again


def test_markers_and_validators_for_the_stream() -> None:
    reg = PayloadRegistry()
    reg.register(proposal())
    reg.register(PayloadSpec(type="form", parse_marker="RESEARCH_STREAM_FORM:", schema=StreamForm))
    reg.register(PayloadSpec(type="article", source="tool"))
    assert reg.markers() == {"SUGGESTED_VALUES:", "SUGGESTED_ACTIONS:", "SCHEMA_PROPOSAL:", "RESEARCH_STREAM_FORM:"}
    assert reg.markers(["form", "article", "missing"]) == {"SUGGESTED_VALUES:", "SUGGESTED_ACTIONS:",
                                                           "RESEARCH_STREAM_FORM:"}
    validators = reg.validators()
    assert set(validators) == {"SCHEMA_PROPOSAL:", "RESEARCH_STREAM_FORM:"}
    assert isinstance(validators["SCHEMA_PROPOSAL:"], JsonSchemaValidator)


def test_check_reports_configuration_problems() -> None:
    reg = PayloadRegistry()
    reg.register(proposal())
    reg.register(PayloadSpec(type="tool_card", source="tool", schema=StreamForm))
    assert reg.check() == []

    reg.register(PayloadSpec(type="no_marker"))
    reg.register(PayloadSpec(type="bad_marker", parse_marker="bad marker"))
    reg.register(PayloadSpec(type="bad_schema", parse_marker="BAD_SCHEMA:", schema={"type": "strange"}))
    reg.register(PayloadSpec(type="bad_example", parse_marker="BAD_EXAMPLE:", schema=PROPOSAL_SCHEMA,
                             example={"reasoning": "no changes"}))
    problems = reg.check()
    assert len(problems) == 4
    assert "'no_marker': an llm payload needs a parse_marker" in problems[0]
    assert "UPPER_SNAKE" in problems[1]
    assert "schema does not build" in problems[2]
    assert "example does not match" in problems[3]


def test_module_level_default_registry() -> None:
    assert isinstance(registry, PayloadRegistry)


def test_assign_payload_id() -> None:
    ids = {assign_payload_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)


# ---- spec --------------------------------------------------------------------------------------


def test_validator_is_built_once_and_validates() -> None:
    spec = proposal()
    assert spec.validator() is spec.validator()
    assert spec.validator().validate(PROPOSAL_EXAMPLE) == PROPOSAL_EXAMPLE
    with pytest.raises(ValueError):
        spec.validator().validate({"reasoning": "x"})
    with pytest.raises(SchemaError):
        proposal(schema={"oneOf": []}).validator()


def test_default_summary_uses_first_strings_and_is_short() -> None:
    spec = proposal()
    data = {"proposed_changes": {"stream_name": "Oncology Monitor", "purpose": "Track cancer treatment"},
            "reasoning": "word " * 100}
    summary = spec.summary(data)
    assert summary.startswith("Schema proposal: Oncology Monitor, Track cancer treatment")  # the type's title, not its name
    assert len(summary) <= SUMMARY_MAX_CHARS
    assert spec.summary({"n": 1}) == "Schema proposal"


def test_custom_summary_and_its_failure() -> None:
    spec = proposal(summarize=lambda d: f"Rename to {d['proposed_changes']['stream_name']}")
    assert spec.summary(PROPOSAL_EXAMPLE) == "Rename to Oncology Monitor"
    assert spec.summary({"proposed_changes": {}}) == "Schema proposal"  # KeyError -> default
    assert len(proposal(summarize=lambda d: "x" * 500).summary({})) == SUMMARY_MAX_CHARS


def test_instructions_tell_marker_shape_and_example() -> None:
    text = proposal().instructions()
    assert "SCHEMA_PROPOSAL:" in text
    assert "Use when the user asks to change the stream." in text
    assert '"required":["proposed_changes"]' in text
    assert 'SCHEMA_PROPOSAL: {"proposed_changes": {"stream_name": "Oncology Monitor"}' in text


def test_instructions_for_pydantic_schema_drop_auto_titles_only() -> None:
    class Titled(BaseModel):
        title: str

    spec = PayloadSpec(type="titled", parse_marker="TITLED:", schema=Titled)
    schema = spec.json_schema()
    assert schema == {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    assert "TITLED:" in spec.instructions()


def test_tool_payload_instructions_say_not_to_write_it() -> None:
    text = PayloadSpec(type="pubmed_article", source="tool", description="Article card").instructions()
    assert "pubmed_article" in text and "never write it yourself" in text
