"""TextPipe: blocks behind a marker never reach the stream; deltas are coalesced, flushed before other events."""
from __future__ import annotations

from chat.runs import RunHandle
from chat.turns.pipe import TextPipe
from tests.protocol import check_wire


def _texts(handle: RunHandle) -> list[str]:
    return [check_wire(e)["text"] for e in handle.events]


async def test_marked_blocks_are_held_back_and_kept_for_parsing() -> None:
    handle = RunHandle("r", 1, 1)
    pipe = TextPipe(handle, ["SUGGESTED_VALUES:"], window=0)
    for chunk in ["Hello ", "there.\nSUGGES", "TED_VALUES: [\"yes\", ", "\"no\"]"]:
        pipe.feed(chunk)
    pipe.close()
    assert "".join(_texts(handle)) == pipe.text == pipe.emitted_text
    assert "SUGGESTED" not in pipe.text and "yes" not in pipe.text
    assert [b.marker for b in pipe.filter.extracted] == ["SUGGESTED_VALUES:"]


async def test_deltas_within_a_window_become_one_event() -> None:
    handle = RunHandle("r", 1, 1)
    emitted: list[int] = []
    pipe = TextPipe(handle, [], window=60)
    pipe.on_emit = lambda: emitted.append(handle.last_seq)
    pipe.feed("first")  # the first text goes out at once
    for word in [" a", " b", " c"]:
        pipe.feed(word)
    assert _texts(handle) == ["first"] and pipe.emitted_text == "first" and pipe.text == "first a b c"
    pipe.flush()  # what happens before any other event (or when the window's timer fires)
    assert _texts(handle) == ["first", " a b c"] and emitted == [1, 2]
    pipe.feed_verbatim("\n\n[[tool:0]]\n\n")  # server-written text is never parsed for blocks
    pipe.close()
    assert _texts(handle)[-1] == "\n\n[[tool:0]]\n\n"
