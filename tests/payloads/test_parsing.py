"""MarkerStreamFilter (split-proof hiding of marker blocks), parse_blocks and the validators."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from pydantic import BaseModel

from chat.events import SuggestedAction, SuggestedValue
from payloads.parsing import (
    Extracted,
    JsonSchemaValidator,
    MarkerStreamFilter,
    PayloadValidationError,
    PydanticValidator,
    SchemaError,
    extract_blocks,
    make_validator,
    parse_blocks,
)

MARKERS = ("SCHEMA_PROPOSAL:", "SUGGESTED_VALUES:", "SUGGESTED_ACTIONS:", "RESEARCH_STREAM_FORM:")


def run(deltas: list[str], markers: tuple[str, ...] = MARKERS) -> tuple[list[str], MarkerStreamFilter]:
    """Feed deltas one by one; return every chunk of visible output (close() last)."""
    f = MarkerStreamFilter(markers)
    chunks = [f.feed(d) for d in deltas]
    chunks.append(f.close())
    return chunks, f


def visible(deltas: list[str], markers: tuple[str, ...] = MARKERS) -> str:
    return "".join(run(deltas, markers)[0])


# ---- strategies --------------------------------------------------------------------------------

# Prose deliberately full of marker look-alikes, JSON punctuation and tool markers.
_PROSE_PIECES = st.one_of(
    st.text(alphabet="abcSCHEMA_PROPSUGTDVL:{}[]\"`\\ \n.,!", max_size=12),
    st.sampled_from(["SCHEMA_PRO", "SUGGESTED_", "SUGGESTED_VAL", "[[tool:0]]", "```", "```json", "{", "} ",
                     "RESEARCH_STREAM_FORM", "VALUES", "Hello there. ", "\n\n", "é✓"]),
)
prose = st.lists(_PROSE_PIECES, max_size=5).map("".join).filter(lambda s: not any(m in s for m in MARKERS))

# JSON strings that contain everything the bracket matcher must not be fooled by.
_tricky_text = st.text(alphabet='ab"\\{}[]`:\n SCHEMA_PROPOSAL', max_size=10) | st.sampled_from(list(MARKERS))
json_leaf = st.none() | st.booleans() | st.integers(-5, 5) | _tricky_text
json_value = st.recursive(json_leaf, lambda kids: st.lists(kids, max_size=3)
                          | st.dictionaries(_tricky_text, kids, max_size=3), max_leaves=8)
json_top = st.one_of(st.dictionaries(_tricky_text, json_value, max_size=4), st.lists(json_value, max_size=4))

INVALID_BALANCED = ['{"a": 1,}', "{a: 1}", "[1, 2,]", '{"a": tru}', '{"a" 1}', "{'a': 1}", "[}"]
BROKEN_FENCED = ['{"a": [1, 2}', '{"a": {"b": 1}', '[{"x": "y"', '{"a": "b", ']


@dataclass
class Doc:
    """A generated text with its reference answer."""

    text: str
    visible: str
    blocks: list[Extracted]


@st.composite
def dumped(draw: st.DrawFn) -> str:
    value = draw(json_top)
    return json.dumps(value, indent=draw(st.sampled_from([None, 2])), ensure_ascii=draw(st.booleans()))


@st.composite
def block(draw: st.DrawFn) -> tuple[str, Extracted]:
    """A complete block: (its text, what the filter must extract)."""
    marker = draw(st.sampled_from(MARKERS))
    sep = draw(st.sampled_from(["", " ", "\n", " \n\n"]))
    kind = draw(st.sampled_from(["valid", "valid", "invalid", "broken_fenced"]))
    if kind == "valid":
        raw = draw(dumped())
    elif kind == "invalid":
        raw = draw(st.sampled_from(INVALID_BALANCED))
    else:
        raw = draw(st.sampled_from(BROKEN_FENCED))
    fenced = kind == "broken_fenced" or draw(st.booleans())
    if fenced:
        opener = draw(st.sampled_from(["```json\n", "```\n", "```json ", "```"]))
        closer = draw(st.sampled_from(["\n```", "```", "\n  ```"]))
        text = f"{marker}{sep}{opener}{raw}{closer}"
    else:
        text = f"{marker}{sep}{raw}"
    return text, Extracted(marker, raw.rstrip() if kind == "broken_fenced" else raw)


@st.composite
def unterminated(draw: st.DrawFn) -> tuple[str, Extracted]:
    """A block cut off by the end of the stream: a proper prefix of valid JSON never balances."""
    marker = draw(st.sampled_from(MARKERS))
    raw = draw(dumped())
    cut = draw(st.integers(1, len(raw) - 1)) if len(raw) > 1 else 1
    raw = raw[:cut] if len(raw) > 1 else "{"
    opener = draw(st.sampled_from(["", "```json\n"]))
    return f"{marker} {opener}{raw}", Extracted(marker, raw.rstrip())


DECOYS = [" none", ": see below", "\n\nplain words", " ```py x", " `x", " ``x", " ````x", " (soon)"]


@st.composite
def document(draw: st.DrawFn, with_decoys: bool = False) -> Doc:
    parts: list[tuple[str, str, Extracted | None]] = []  # (text, visible, extracted)
    for _ in range(draw(st.integers(0, 4))):
        p = draw(prose)
        parts.append((p, p, None))
        if with_decoys and draw(st.booleans()):
            decoy = draw(st.sampled_from(MARKERS)) + draw(st.sampled_from(DECOYS))
            parts.append((decoy, decoy, None))
        else:
            text, ext = draw(block())
            parts.append((text, "", ext))
    tail = draw(prose)
    parts.append((tail, tail, None))
    if draw(st.booleans()):
        text, ext = draw(unterminated())
        parts.append((text, "", ext))
    return Doc(
        text="".join(p[0] for p in parts),
        visible="".join(p[1] for p in parts),
        blocks=[p[2] for p in parts if p[2] is not None],
    )


def split(data: st.DataObject, text: str) -> list[str]:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


# ---- properties --------------------------------------------------------------------------------

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(doc=document(), data=st.data())
def test_any_split_hides_exactly_the_blocks(doc: Doc, data: st.DataObject) -> None:
    assume(not any(m in doc.visible for m in MARKERS))
    chunks, f = run(split(data, doc.text))
    assert "".join(chunks) == doc.visible
    for chunk in chunks:
        assert not any(m in chunk for m in MARKERS)
    assert f.extracted == doc.blocks


@SETTINGS
@given(doc=document(with_decoys=True), data=st.data())
def test_markers_without_json_are_released_as_text(doc: Doc, data: st.DataObject) -> None:
    chunks, f = run(split(data, doc.text))
    assert "".join(chunks) == doc.visible
    assert f.extracted == doc.blocks


@SETTINGS
@given(doc=document(with_decoys=True))
def test_one_char_deltas_match_one_shot(doc: Doc) -> None:
    one_shot = extract_blocks(doc.text, MARKERS)
    chunks, f = run(list(doc.text))
    assert ("".join(chunks), f.extracted) == one_shot


@settings(max_examples=200, deadline=None)
@given(text=prose, data=st.data())
def test_prose_holds_back_at_most_a_marker_prefix(text: str, data: st.DataObject) -> None:
    f = MarkerStreamFilter(MARKERS)
    shown = fed = ""
    for delta in split(data, text):
        fed += delta
        shown += f.feed(delta)
        assert fed.startswith(shown)
        pending = fed[len(shown):]
        # Everything not yet shown must be a (proper) prefix of some marker, so prose never waits.
        assert pending == "" or any(m.startswith(pending) and m != pending for m in MARKERS)
    assert shown + f.close() == text


# ---- explicit cases ----------------------------------------------------------------------------


def test_marker_split_across_deltas_never_leaks() -> None:
    chunks, f = run(["Here it is: SCHEMA_PRO", 'POSAL: {"proposed_changes": {"name": "Onc"}', ', "reasoning": "x"}',
                     " Thanks."])
    assert chunks == ["Here it is: ", "", "", " Thanks.", ""]
    assert f.extracted == [Extracted("SCHEMA_PROPOSAL:", '{"proposed_changes": {"name": "Onc"}, "reasoning": "x"}')]


def test_partial_prefix_is_released_as_soon_as_it_is_decided() -> None:
    f = MarkerStreamFilter(MARKERS)
    assert f.feed("Hello S") == "Hello "
    assert f.feed("ure thing") == "Sure thing"
    assert f.feed("SUGGESTED_VALUES") == ""
    assert f.feed(" is a word") == "SUGGESTED_VALUES is a word"
    assert f.close() == ""


def test_fenced_json_with_trailing_prose() -> None:
    text = 'Proposal below.\nSCHEMA_PROPOSAL:\n```json\n{\n  "a": "}{`",\n  "b": [1, 2]\n}\n```\nLet me know!'
    shown, blocks = extract_blocks(text, MARKERS)
    assert shown == "Proposal below.\n\nLet me know!"
    assert json.loads(blocks[0].raw) == {"a": "}{`", "b": [1, 2]}


def test_marker_like_word_not_followed_by_json_is_text() -> None:
    text = "Use SCHEMA_PROPOSAL: when you want. Also SUGGESTED_VALUES: none."
    assert extract_blocks(text, MARKERS) == (text, [])


def test_fence_with_non_json_content_is_text() -> None:
    text = "SCHEMA_PROPOSAL: ```python\nprint(1)\n```"
    assert extract_blocks(text, MARKERS) == (text, [])


def test_tool_markers_pass_through_unchanged() -> None:
    text = "Searching.\n\n[[tool:0]]\n\nFound it [[tool:1]] SUGGESTED_VALUES: [\"a\"] done [[tool:2]]"
    assert visible(list(text)) == "Searching.\n\n[[tool:0]]\n\nFound it [[tool:1]]  done [[tool:2]]"


def test_escapes_split_across_deltas() -> None:
    chunks, f = run(['SCHEMA_PROPOSAL: {"a": "q\\', '"}', '"}', "!"])
    assert "".join(chunks) == "!"
    assert json.loads(f.extracted[0].raw) == {"a": 'q"}'}


def test_unterminated_block_is_extracted_and_hidden() -> None:
    chunks, f = run(["Done. SCHEMA_PROPOSAL: {\"a\": [1, ", "2"])
    assert "".join(chunks) == "Done. "
    assert f.extracted == [Extracted("SCHEMA_PROPOSAL:", '{"a": [1, 2')]


def test_broken_fenced_json_ends_at_the_fence() -> None:
    shown, blocks = extract_blocks('SCHEMA_PROPOSAL: ```json\n{"a": [1}\n```\nstill here', MARKERS)
    assert shown == "\nstill here"
    assert blocks == [Extracted("SCHEMA_PROPOSAL:", '{"a": [1}')]


def test_unclosed_fence_after_json_releases_whitespace() -> None:
    assert extract_blocks('X SCHEMA_PROPOSAL: ```json\n{"a": 1}\n', MARKERS)[0] == "X \n"
    assert extract_blocks('SCHEMA_PROPOSAL: ```{"a": 1}`` x', MARKERS)[0] == "`` x"


def test_longest_marker_wins_and_unknown_markers_are_text() -> None:
    shown, blocks = extract_blocks('FOO_VALUES: [1] SUGGESTED_VALUES: ["x"]', ("VALUES:", "SUGGESTED_VALUES:"))
    assert shown == "FOO_ "
    assert [b.marker for b in blocks] == ["VALUES:", "SUGGESTED_VALUES:"]


def test_feed_after_close_and_bad_markers_raise() -> None:
    f = MarkerStreamFilter(MARKERS)
    f.close()
    with pytest.raises(RuntimeError):
        f.feed("x")
    for bad in ("lower:", "NO_COLON", "TWO:COLONS:", ""):
        with pytest.raises(ValueError):
            MarkerStreamFilter({bad})


def test_no_markers_is_a_pass_through() -> None:
    assert visible(["a {b}", " SCHEMA_PROPOSAL: {}"], ()) == "a {b} SCHEMA_PROPOSAL: {}"


# ---- parse_blocks ------------------------------------------------------------------------------

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
        "schema violation: $: missing required property 'proposed_changes'",
        "schema violation: $: unexpected property 'extra'",
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


# ---- validators --------------------------------------------------------------------------------


def test_json_schema_subset() -> None:
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


def test_non_json_constants_are_invalid() -> None:
    parsed = parse_blocks([Extracted("SCHEMA_PROPOSAL:", '{"proposed_changes": {"x": NaN}}')], SPECS)
    assert parsed.payloads == [] and "NaN" in parsed.errors[0]["error"]


# ---- the specs' line formats for suggestions (a fallback to JSON) -------------------------------

from chat.events import SUGGESTION_MARKERS  # noqa: E402
from payloads.parsing import parse_actions_line, parse_values_line  # noqa: E402

LINE_TEXT = (
    "Sure.\nSUGGESTED_VALUES: Yes, No, Tell me more\n"
    'SUGGESTED_ACTIONS: Accept & Create|create_stream|server|primary|{"stream_name":"a;b|c"}; Close|close|client|secondary\n'
    "bye"
)


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


@SETTINGS
@given(data=st.data())
def test_line_format_any_split_matches_one_shot(data: st.DataObject) -> None:
    one_shot = extract_blocks(LINE_TEXT, MARKERS, SUGGESTION_MARKERS)
    f = MarkerStreamFilter(MARKERS, SUGGESTION_MARKERS)
    chunks = [f.feed(d) for d in split(data, LINE_TEXT)] + [f.close()]
    assert ("".join(chunks), f.extracted) == one_shot


def test_line_format_is_off_unless_asked_and_json_still_wins() -> None:
    assert extract_blocks("SUGGESTED_VALUES: none.", MARKERS) == ("SUGGESTED_VALUES: none.", [])
    shown, blocks = extract_blocks('SUGGESTED_VALUES: ["a"] ok', MARKERS, SUGGESTION_MARKERS)
    assert (shown, blocks) == (" ok", [Extracted("SUGGESTED_VALUES:", '["a"]')])
    # a payload marker never takes a line: it stays text
    assert extract_blocks("SCHEMA_PROPOSAL: soon", MARKERS, SUGGESTION_MARKERS) == ("SCHEMA_PROPOSAL: soon", [])
    # the line must start on the marker's own line
    assert extract_blocks("SUGGESTED_VALUES:\nYes, No", MARKERS, SUGGESTION_MARKERS) == ("SUGGESTED_VALUES:\nYes, No", [])
    # an unterminated line at the end of the stream is still a block
    assert extract_blocks("x SUGGESTED_VALUES: a, b", MARKERS, SUGGESTION_MARKERS)[1] == [Extracted("SUGGESTED_VALUES:", "a, b", True)]


def test_line_format_bad_items_are_reported_not_shown() -> None:
    assert parse_values_line(" , a ,, b ") == [{"label": "a", "value": "a"}, {"label": "b", "value": "b"}]
    assert parse_actions_line("Go|navigate|client||not json") == [{"label": "Go", "action": "navigate", "handler": "client"}]
    parsed = parse_blocks([Extracted("SUGGESTED_ACTIONS:", "only|two; Ok|close|client", True),
                           Extracted("SUGGESTED_VALUES:", " , ", True)], {})
    assert [a.action for a in parsed.suggested_actions] == ["close"]
    assert [e["marker"] for e in parsed.errors] == ["SUGGESTED_ACTIONS:", "SUGGESTED_VALUES:"]
