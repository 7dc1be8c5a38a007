"""A finished run's events kept compactly (chat.runs.compact): every frame reads back as exactly the bytes it was, at
its seq, for any text; a long answer takes its text about twice (the deltas' text once, `message_html`), not three
times plus an envelope per delta; a run's events are freed (and the trimmer told) by reference counting alone."""
from __future__ import annotations

import gc
import json
import weakref

from hypothesis import given, settings, strategies as st

from chat.events import CompleteEvent, Envelope, ErrorEvent, StatusEvent, TextDeltaEvent, ToolStartEvent, complete_payload_build
from chat.runs import RunHandle
from chat.runs.compact import FinishedEvents
from chat.runs.malloc import trimmer
from tests.protocol import check_wire

# any text a model may send: quotes, backslashes, control characters, non-ASCII, astral characters
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


def complete(handle: RunHandle, message: str) -> int:
    payload = complete_payload_build(message=message, suggested_values=[], suggested_actions=[], custom_payload=None,
                                     tool_history=[], conversation_id=7, message_id=3, run_id=handle.run_id,
                                     usage={"input_tokens": 1, "output_tokens": 2})
    return handle.end(CompleteEvent.wire, payload=payload)


def run_of(deltas: list[str], *, tool_after: int = -1, message: str | None = None, base: int = 0) -> tuple[RunHandle, list[str]]:
    """A run (no shared log: it is compacted as it ends) and its frames as they were built."""
    handle = RunHandle("run-c", 7, 1)
    handle.append(StatusEvent.wire, message="Thinking…")
    for i, text in enumerate(deltas):
        handle.append(TextDeltaEvent.wire, text=text)
        if i == tool_after:
            handle.append(ToolStartEvent.wire, tool="t", input={"q": text}, tool_use_id="tu1")
    handle.release_before(base + 1)
    frames = list(handle.events)  # still the live list: the frames exactly as sent
    seq = complete(handle, "".join(deltas) if message is None else message)
    return handle, [*frames, handle.events[seq - 1 - handle.base]]


@settings(max_examples=150, deadline=None)
@given(st.lists(texts, max_size=12), st.integers(-1, 12), st.one_of(st.none(), texts), st.integers(0, 3))
def test_every_frame_reads_back_exactly(deltas: list[str], tool_after: int, message: str | None, base: int) -> None:
    handle, frames = run_of(deltas, tool_after=tool_after, message=message, base=base)
    events = handle.events
    assert isinstance(events, FinishedEvents)
    assert len(events) == len(frames) and list(events) == frames and events[:] == frames and events[-1] == frames[-1]
    assert [events[i] for i in range(len(frames))] == frames and events[1:3] == frames[1:3]
    assert [check_wire(e)["seq"] for e in events] == list(range(handle.base + 1, handle.last_seq + 1))


def test_a_long_answer_is_held_about_twice_not_three_times() -> None:
    deltas = [f" word{i} \"quoted\" é 😀 \\ " for i in range(3000)]  # ~86 KB of text with escapes and non-ASCII
    handle, frames = run_of(deltas)
    text, sent = len("".join(deltas).encode()), sum(len(f.encode()) for f in frames)
    assert sent > 3.4 * text  # as sent: the deltas' text, `message`, `message_html`, an envelope per delta
    assert isinstance(handle.events, FinishedEvents) and list(handle.events) == frames
    # held: the deltas' (JSON-escaped) text once, message_html, 5 bytes of index an event
    assert handle.bytes == handle.events.nbytes < min(2.4 * text, 0.65 * sent)


def test_a_complete_whose_message_differs_is_kept_as_it_is() -> None:
    handle, frames = run_of(["abc", "def"], message="abcdef and more")  # held-back blocks: message != the deltas
    assert list(handle.events) == frames
    assert json.loads(handle.events[-1])["payload"]["message"] == "abcdef and more"


async def test_followers_read_on_across_the_compaction() -> None:
    handle = RunHandle("run-f", 7, 1)
    handle.append(StatusEvent.wire, message="…")
    handle.append(TextDeltaEvent.wire, text="one")
    reader = handle.follow(0)
    assert (await anext(reader))[0] == 1
    handle.append(TextDeltaEvent.wire, text="two")
    handle.end(ErrorEvent.wire, code="internal", message="x")
    rest = [check_wire(e) async for _, e in reader]
    assert [(e["seq"], e.get("text")) for e in rest] == [(2, "one"), (3, "two"), (4, None)]
    assert [json.loads(e)["seq"] async for _, e in handle.follow(2)] == [3, 4]  # replay from a seq


async def test_released_events_of_a_compacted_run() -> None:
    handle, frames = run_of(["a", "b", "c"])
    assert handle.release_before(handle.last_seq) == len(frames) - 1
    assert handle.events == frames[-1:] and handle.bytes == len(frames[-1]) and handle.base == len(frames) - 1


def test_a_let_go_run_is_freed_without_the_cycle_collector_and_the_trimmer_is_told() -> None:
    handle, _ = run_of(["x" * 1000] * 300)
    assert isinstance(handle.events, FinishedEvents)
    events, nbytes = weakref.ref(handle.events), handle.events.nbytes
    owed = trimmer._owed  # no event loop runs here: the trimmer only counts
    gc.disable()  # reference counting alone: an idle server may not run a full collection for hours
    try:
        del handle
        assert events() is None and trimmer._owed == owed + nbytes
    finally:
        gc.enable()


def test_envelope_of_another_run_is_not_mistaken_for_a_delta() -> None:
    other = Envelope("run-other", 7)
    frames = [TextDeltaEvent.wire(other, 1, text="hello")]
    assert list(FinishedEvents(frames, 0, Envelope("run-c", 7))) == frames
