"""MarkerStreamFilter: split-proof hiding of marker blocks (JSON and the suggestions' line formats)."""
from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings, strategies as st

from chat.events import SUGGESTION_MARKERS
from payloads.stream import Extracted, MarkerStreamFilter, extract_blocks
from tests.payloads.blocks import LINE_TEXT, MARKERS, SETTINGS, Doc, document, prose, split


def run(deltas: list[str], markers: tuple[str, ...] = MARKERS) -> tuple[list[str], MarkerStreamFilter]:
    """Feed deltas one by one; return every chunk of visible output (close() last)."""
    f = MarkerStreamFilter(markers)
    chunks = [f.feed(d) for d in deltas]
    chunks.append(f.close())
    return chunks, f


def visible(deltas: list[str], markers: tuple[str, ...] = MARKERS) -> str:
    return "".join(run(deltas, markers)[0])


# ---- properties --------------------------------------------------------------------------------


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


# ---- the specs' line formats for suggestions -----------------------------------------------------


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
