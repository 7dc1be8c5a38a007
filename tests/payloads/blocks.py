"""What the payload tests share: the markers, hypothesis strategies for texts full of blocks and look-alikes, splits."""
from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import HealthCheck, settings, strategies as st

from payloads.stream import Extracted

MARKERS = ("SCHEMA_PROPOSAL:", "SUGGESTED_VALUES:", "SUGGESTED_ACTIONS:", "RESEARCH_STREAM_FORM:")
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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


# The specs' line formats for suggestions (a fallback to JSON).
LINE_TEXT = (
    "Sure.\nSUGGESTED_VALUES: Yes, No, Tell me more\n"
    'SUGGESTED_ACTIONS: Accept & Create|create_stream|server|primary|{"stream_name":"a;b|c"}; Close|close|client|secondary\n'
    "bye"
)
