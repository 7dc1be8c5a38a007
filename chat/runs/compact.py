"""A finished run's events, kept compactly for replay until it is let go (CHAT_RUN_LOG_TTL, the memory bounds).

A live run holds one str per event. Once it has ended its events no longer change, and most of them are
`text_delta` frames that differ only in their seq and text, while the terminal `complete` repeats the whole text
in `payload.message`: kept as they were, a long answer's text is held twice over in frames, plus one envelope per
delta (with a paced model, one every coalescing window: more envelope than text). `FinishedEvents` keeps the
deltas' JSON-encoded text once, in one UTF-8 blob, rebuilds each delta's envelope from its seq, and keeps a frame
that carries the whole text (the `complete`) as its parts around it. Every frame is checked to rebuild to exactly
its bytes before it is stored that way (else it is stored as it is), so a replay sends the same bytes as the live
stream: the protocol's "same bytes on every replay" holds.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

from chat.events import Envelope
from chat.runs.malloc import trimmer

_VERBATIM, _DELTA, _WHOLE_TEXT = 0, 1, 2
_TEXT_CLOSE = '"}'  # a text_delta frame ends with its text's closing quote and brace
_MESSAGE_KEY = '"message":"'  # where `complete` carries the streamed text


class FinishedEvents(Sequence[str]):
    """A finished run's wire frames (index i holds seq base+1+i), read back one at a time exactly as they were."""

    __slots__ = ("_head", "_mid", "_base", "_kinds", "_text", "_text_ends", "_other", "_others", "_split", "__weakref__")

    def __init__(self, events: Sequence[str], base: int, envelope: Envelope) -> None:
        self._head = f'{{"type":"text_delta",{envelope.head}'  # then the seq
        self._mid = f'{envelope.tail},"text":"'  # then the JSON-encoded text and `"}`
        self._base = base
        self._kinds = bytearray(len(events))
        texts: list[bytes] = []
        others: list[bytes] = []
        # per event, where its text ends in _text (4 bytes an event: a run holds at most CHAT_RUN_MEMORY_MAX_BYTES)
        self._text_ends = array("I")
        self._others: dict[int, tuple[int, int]] = {}  # the other events (few): index -> their span in _other
        self._split = -1  # where the whole text goes into the one _WHOLE_TEXT frame's other part
        text_end = other_end = 0
        last = len(events) - 1
        for i, data in enumerate(events):
            prefix = f"{self._head}{base + 1 + i}{self._mid}"
            if data.startswith(prefix) and data.endswith(_TEXT_CLOSE) and len(data) >= len(prefix) + len(_TEXT_CLOSE):
                piece = data[len(prefix):-len(_TEXT_CLOSE)].encode()
                texts.append(piece)
                text_end += len(piece)
                self._kinds[i] = _DELTA
            else:
                # the terminal event may repeat every delta's text as its `message` (a `complete` after text)
                whole = b"".join(texts).decode() if i == last and texts else ""
                at = data.find(f'{_MESSAGE_KEY}{whole}"') if whole else -1
                if at >= 0:
                    cut = at + len(_MESSAGE_KEY)
                    before = data[:cut].encode()
                    piece = before + data[cut + len(whole):].encode()
                    self._split = len(before)
                    self._kinds[i] = _WHOLE_TEXT
                else:
                    piece = data.encode()
                others.append(piece)
                self._others[i] = (other_end, other_end + len(piece))
                other_end += len(piece)
            self._text_ends.append(text_end)
        self._text = b"".join(texts)
        self._other = b"".join(others)

    @property
    def nbytes(self) -> int:
        """About what it holds in memory (its blobs and index)."""
        return len(self._text) + len(self._other) + len(self._kinds) * (1 + self._text_ends.itemsize) + 100 * len(self._others)

    def __len__(self) -> int:
        return len(self._kinds)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._frame(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._frame(index)

    def __iter__(self) -> Iterator[str]:
        return (self._frame(i) for i in range(len(self)))

    def _frame(self, i: int) -> str:
        """Event i rebuilt: a copy the reader sends and drops (the trimmer is told, as for freed events)."""
        kind = self._kinds[i]
        t0, t1 = (self._text_ends[i - 1] if i else 0), self._text_ends[i]
        if kind == _DELTA:
            frame = f"{self._head}{self._base + 1 + i}{self._mid}{self._text[t0:t1].decode()}{_TEXT_CLOSE}"
        else:
            o0, o1 = self._others[i]
            other = self._other[o0:o1]
            frame = (other[:self._split] + self._text[:t1] + other[self._split:]).decode() if kind == _WHOLE_TEXT else other.decode()
        trimmer.released(len(frame))
        return frame
