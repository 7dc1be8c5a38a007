"""parse_blocks: payload blocks validated, suggestion blocks (JSON or line format) read per item, errors never raised."""
from __future__ import annotations

import json
from typing import Any

from hypothesis import given

from chat.events import SUGGESTION_MARKERS, SuggestedAction, SuggestedValue
from payloads.parsing import parse_actions_line, parse_blocks, parse_values_line
from payloads.stream import Extracted, extract_blocks
from payloads.validation import JsonSchemaValidator
from tests.payloads.blocks import LINE_TEXT, MARKERS, SETTINGS, Doc, document

PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"proposed_changes": {"type": "object"}, "reasoning": {"type": "string"}},
    "required": ["proposed_changes"],
    "additionalProperties": False,
}
SPECS = {"SCHEMA_PROPOSAL:": JsonSchemaValidator(PROPOSAL_SCHEMA)}


def test_valid_payload_is_returned() -> None:
    parsed = parse_blocks([Extracted("SCHEMA_PROPOSAL:", '{"proposed_changes": {"a": 1}}')], SPECS)
    assert parsed.payloads == [("SCHEMA_PROPOSAL:", {"proposed_changes": {"a": 1}})]
    assert parsed.errors == []


def test_invalid_json_is_dropped_with_error() -> None:
    parsed = parse_blocks([Extracted("SCHEMA_PROPOSAL:", '{"a": 1,}')], SPECS)
    assert parsed.payloads == []
    assert parsed.errors[0]["marker"] == "SCHEMA_PROPOSAL:"
    assert parsed.errors[0]["error"].startswith("invalid JSON")
    assert parsed.errors[0]["raw"] == '{"a": 1,}'


def test_schema_violation_is_dropped_with_error() -> None:
    blocks = [Extracted("SCHEMA_PROPOSAL:", '{"reasoning": "x"}'),
              Extracted("SCHEMA_PROPOSAL:", '{"proposed_changes": {}, "extra": 1}'),
              Extracted("SCHEMA_PROPOSAL:", '{"proposed_changes": {}}')]
    parsed = parse_blocks(blocks, SPECS)
    assert parsed.payloads == [("SCHEMA_PROPOSAL:", {"proposed_changes": {}})]
    assert [e["error"] for e in parsed.errors] == [
        "schema violation: $: 'proposed_changes' is a required property",
        "schema violation: $: Additional properties are not allowed ('extra' was unexpected)",
    ]


def test_unknown_marker_and_crashing_validator_never_raise() -> None:
    class Boom:
        def validate(self, data: Any) -> Any:
            raise RuntimeError("kaput")

    parsed = parse_blocks([Extracted("OTHER:", "{}"), Extracted("BOOM:", "{}")], {"BOOM:": Boom()})
    assert parsed.payloads == []
    assert [e["error"] for e in parsed.errors] == ["unknown marker", "schema violation: kaput"]


def test_error_raw_is_truncated() -> None:
    parsed = parse_blocks([Extracted("SCHEMA_PROPOSAL:", "{" + "x" * 5000)], SPECS)
    assert len(parsed.errors[0]["raw"]) <= 201


def test_suggested_values_invalid_items_dropped() -> None:
    raw = json.dumps([{"label": "Oncology", "value": "oncology research"}, {"label": 3, "value": "x"}, {},
                      "Cardiology", {"label": "Only label"}, {"label": "L", "value": "v", "extra": True}])
    parsed = parse_blocks([Extracted("SUGGESTED_VALUES:", raw)], {})
    assert parsed.suggested_values == [
        SuggestedValue(label="Oncology", value="oncology research"),
        SuggestedValue(label="Cardiology", value="Cardiology"),
        SuggestedValue(label="Only label", value="Only label"),
        SuggestedValue(label="L", value="v"),
    ]
    assert [e["error"].split(":")[0] for e in parsed.errors] == ["item 1", "item 2"]


def test_suggested_actions_parsed_and_validated_per_item() -> None:
    raw = json.dumps([
        {"label": "Accept & Create", "action": "create_stream", "handler": "server", "data": {"id": 1},
         "style": "primary", "extra": "ignored"},
        {"label": "Close", "action": "close_chat", "handler": "client", "style": "danger"},
        {"label": "Bad", "action": "x", "handler": "browser"},
        {"action": "no_label", "handler": "client"},
    ])
    parsed = parse_blocks([Extracted("SUGGESTED_ACTIONS:", raw)], {})
    assert parsed.suggested_actions == [
        SuggestedAction(label="Accept & Create", action="create_stream", handler="server", data={"id": 1},
                        style="primary"),
        SuggestedAction(label="Close", action="close_chat", handler="client"),
    ]
    assert len(parsed.errors) == 2


def test_a_token_written_with_an_action_is_never_taken() -> None:
    raw = json.dumps([{"label": "Go", "action": "close_chat", "handler": "client", "token": "forged"}])
    parsed = parse_blocks([Extracted("SUGGESTED_ACTIONS:", raw)], {})
    assert [(a.action, a.token) for a in parsed.suggested_actions] == [("close_chat", None)]  # only the server signs


def test_suggestions_must_be_a_list() -> None:
    parsed = parse_blocks([Extracted("SUGGESTED_VALUES:", '{"label": "a", "value": "b"}')], {})
    assert parsed.suggested_values == []
    assert parsed.errors[0]["error"] == "expected a JSON array"


@SETTINGS
@given(doc=document(with_decoys=True))
def test_parse_blocks_never_raises(doc: Doc) -> None:
    _, blocks = extract_blocks(doc.text, MARKERS)
    parsed = parse_blocks(blocks, SPECS)
    assert len(parsed.payloads) <= len(blocks)


def test_non_json_constants_are_invalid() -> None:
    parsed = parse_blocks([Extracted("SCHEMA_PROPOSAL:", '{"proposed_changes": {"x": NaN}}')], SPECS)
    assert parsed.payloads == [] and "NaN" in parsed.errors[0]["error"]


# ---- the specs' line formats for suggestions (a fallback to JSON) -------------------------------


def test_line_format_blocks_are_hidden_and_parsed() -> None:
    shown, blocks = extract_blocks(LINE_TEXT, MARKERS, SUGGESTION_MARKERS)
    assert shown == "Sure.\n\n\nbye"
    assert [b.line for b in blocks] == [True, True]
    parsed = parse_blocks(blocks, {})
    assert parsed.errors == []
    assert [(v.label, v.value) for v in parsed.suggested_values] == [("Yes", "Yes"), ("No", "No"), ("Tell me more", "Tell me more")]
    first, close = parsed.suggested_actions
    assert (first.label, first.action, first.handler, first.style, first.data) == (
        "Accept & Create", "create_stream", "server", "primary", {"stream_name": "a;b|c"})
    assert (close.action, close.handler, close.style, close.data) == ("close", "client", "secondary", None)


def test_line_format_bad_items_are_reported_not_shown() -> None:
    assert parse_values_line(" , a ,, b ") == [{"label": "a", "value": "a"}, {"label": "b", "value": "b"}]
    assert parse_actions_line("Go|navigate|client||not json") == [{"label": "Go", "action": "navigate", "handler": "client"}]
    parsed = parse_blocks([Extracted("SUGGESTED_ACTIONS:", "only|two; Ok|close|client", True),
                           Extracted("SUGGESTED_VALUES:", " , ", True)], {})
    assert [a.action for a in parsed.suggested_actions] == ["close"]
    assert [e["marker"] for e in parsed.errors] == ["SUGGESTED_ACTIONS:", "SUGGESTED_VALUES:"]
