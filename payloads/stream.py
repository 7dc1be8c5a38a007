"""Marker blocks in model text, hidden from the stream as it is written: `MarkerStreamFilter` and its one-shot form.

A block is `MARKER:` + optional whitespace + optional ```lang fence (lang lowercase) + one JSON
object/array, whose end is found by string-aware bracket matching (+ the closing fence). In a fenced
block a backtick outside a string also ends broken JSON. A block still open when the stream ends is
extracted (trailing whitespace trimmed) and never shown. No Django here: this runs per token.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Uppercase only, so a marker can never start inside the whitespace, backticks or lowercase
# fence language that may follow another marker (keeps the scanner one-pass and split-proof).
MARKER_RE = re.compile(r"[A-Z][A-Z0-9_]*:")


@dataclass(frozen=True, slots=True)
class Extracted:
    """One block cut out of the text: its marker and the raw JSON text (fences stripped), or with `line`
    the rest of the marker's line (the line formats `a, b, c` and `label|action|handler|style|data`)."""

    marker: str
    raw: str
    line: bool = False


_TEXT, _AFTER_MARKER, _IN_JSON, _AFTER_JSON, _IN_LINE = range(5)
# Characters that matter while scanning JSON: outside strings / inside strings.
_JSON_SIGNIFICANT = re.compile(r'[{}\[\]"`]')
_STRING_SIGNIFICANT = re.compile(r'["\\]')


class MarkerStreamFilter:
    """Hides marker blocks from streamed text; feed() outputs + close() == text minus blocks, for any split."""

    def __init__(self, markers: Iterable[str], line_markers: Iterable[str] = ()) -> None:
        self.markers: frozenset[str] = frozenset(markers)
        # Markers whose block may also be the rest of their line instead of JSON (the suggestion markers).
        self.line_markers: frozenset[str] = frozenset(line_markers) & self.markers
        for marker in self.markers:
            if not MARKER_RE.fullmatch(marker):
                raise ValueError(f"marker {marker!r} must be UPPER_SNAKE ending with ':'")
        self.extracted: list[Extracted] = []
        # Longest first so the regex prefers the longest marker at a given start.
        ordered = sorted(self.markers, key=len, reverse=True)
        self._search = re.compile("|".join(map(re.escape, ordered))).search if ordered else None
        self._prefixes = {m[:k] for m in self.markers for k in range(1, len(m))}
        self._prefix_chars = {c for m in self.markers for c in m}
        self._max_prefix = max((len(m) - 1 for m in self.markers), default=0)
        self._state = _TEXT
        self._held = ""  # TEXT: a possible marker prefix; otherwise text to release if no block
        self._marker = ""
        self._sub = ""  # step inside _AFTER_MARKER: ws | ticks | lang | fws
        self._newline = False  # _AFTER_MARKER: a newline followed the marker (a line block must start on its line)
        self._ticks = 0
        self._fenced = False
        self._raw: list[str] = []
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._closed = False

    def feed(self, delta: str) -> str:
        """Consume a delta; return the text now known to lie outside any block."""
        if self._closed:
            raise RuntimeError("feed() after close()")
        if (self._state == _TEXT and not self._held and delta and delta[-1] not in self._prefix_chars
                and (self._search is None or self._search(delta) is None)):
            return delta  # prose: no marker in it and none beginning at its end (most tokens end here)
        out: list[str] = []
        i, n = 0, len(delta)
        while i < n:
            if self._state == _TEXT:
                i = self._scan_text(delta, i, out)
            elif self._state == _AFTER_MARKER:
                i = self._scan_opener(delta, i, out)
            elif self._state == _IN_JSON:
                i = self._scan_json(delta, i)
            elif self._state == _IN_LINE:
                i = self._scan_line(delta, i)
            else:
                i = self._scan_closer(delta, i, out)
        return "".join(out)

    def close(self) -> str:
        """End of stream: release held text; an unterminated block is extracted and stays hidden."""
        if self._closed:
            return ""
        self._closed = True
        if self._state == _IN_JSON:
            self._finish_block("".join(self._raw).rstrip())
            return ""
        if self._state == _IN_LINE:
            self._finish_block("".join(self._raw).strip(), line=True)
            return ""
        held, self._held = self._held, ""
        return held

    # -- states ---------------------------------------------------------------------------------

    def _scan_text(self, s: str, i: int, out: list[str]) -> int:
        text = self._held + s[i:] if self._held else s[i:]
        self._held = ""
        hit = self._search(text) if self._search else None
        if hit:
            out.append(text[: hit.start()])
            self._state, self._sub, self._ticks, self._newline = _AFTER_MARKER, "ws", 0, False
            self._marker = self._held = hit.group()
            return len(s) - (len(text) - hit.end())
        keep = self._partial_marker_len(text)
        out.append(text[: len(text) - keep])
        self._held = text[len(text) - keep :]
        return len(s)

    def _partial_marker_len(self, text: str) -> int:
        # Fast path: prose rarely ends in a character that occurs in a marker.
        if not text or text[-1] not in self._prefix_chars:
            return 0
        for k in range(min(self._max_prefix, len(text)), 0, -1):
            if text[-k:] in self._prefixes:
                return k
        return 0

    def _scan_opener(self, s: str, i: int, out: list[str]) -> int:
        """Between marker and JSON: whitespace, then maybe ```lang and whitespace, then { or [."""
        n = len(s)
        while i < n:
            c = s[i]
            sub = self._sub
            if sub == "ticks":
                if c == "`" and self._ticks < 3:
                    self._ticks += 1
                elif self._ticks == 3:
                    self._sub = "lang"
                    continue
                else:
                    return self._release(i, out)
            elif sub == "lang" and "a" <= c <= "z":
                pass
            elif c.isspace() and sub != "ticks":
                if sub == "lang":
                    self._sub = "fws"
                elif c == "\n":
                    self._newline = True
            elif c in "{[":
                self._start_json(fenced=sub != "ws")
                return i
            elif c == "`" and sub == "ws":
                self._sub, self._ticks = "ticks", 1
            elif sub == "ws" and not self._newline and self._marker in self.line_markers:
                self._state, self._held, self._raw = _IN_LINE, "", []
                return i
            else:
                return self._release(i, out)
            self._held += c
            i += 1
        return i

    def _start_json(self, *, fenced: bool) -> None:
        self._state, self._fenced, self._held = _IN_JSON, fenced, ""
        self._raw, self._depth, self._in_string, self._escape = [], 0, False, False

    def _scan_json(self, s: str, i: int) -> int:
        """String-aware bracket matching; jumps between significant characters only."""
        start, n = i, len(s)
        if self._escape:
            self._escape, i = False, i + 1
        while i < n:
            if self._in_string:
                m = _STRING_SIGNIFICANT.search(s, i)
                if m is None:
                    i = n
                    break
                i = m.end()
                if m.group() == '"':
                    self._in_string = False
                elif i < n:
                    i += 1  # the escaped character, whatever it is
                else:
                    self._escape = True
                continue
            m = _JSON_SIGNIFICANT.search(s, i)
            if m is None:
                i = n
                break
            c, i = m.group(), m.end()
            if c == '"':
                self._in_string = True
            elif c in "{[":
                self._depth += 1
            elif c in "}]":
                self._depth -= 1
                if self._depth == 0:
                    self._raw.append(s[start:i])
                    self._finish_block("".join(self._raw))
                    self._state = _AFTER_JSON if self._fenced else _TEXT
                    self._ticks, self._held = 0, ""
                    return i
            elif self._fenced:
                # A backtick outside a string cannot be JSON: the fence closes a broken block.
                self._raw.append(s[start : i - 1])
                self._finish_block("".join(self._raw).rstrip())
                self._state, self._ticks, self._held = _AFTER_JSON, 0, ""
                return i - 1
        self._raw.append(s[start:i])
        return i

    def _scan_line(self, s: str, i: int) -> int:
        """A line-format block: everything up to (not including) the end of its line."""
        end = s.find("\n", i)
        if end < 0:
            self._raw.append(s[i:])
            return len(s)
        self._raw.append(s[i:end])
        self._finish_block("".join(self._raw).strip(), line=True)
        self._state = _TEXT
        return end

    def _scan_closer(self, s: str, i: int, out: list[str]) -> int:
        """After fenced JSON: whitespace then ``` ends the block; anything else is prose again."""
        n = len(s)
        while i < n:
            c = s[i]
            if c == "`":
                self._ticks += 1
                if self._ticks == 3:
                    self._state, self._held, self._ticks = _TEXT, "", 0
                    return i + 1
            elif not (c.isspace() and self._ticks == 0):
                return self._release(i, out)
            self._held += c
            i += 1
        return i

    def _release(self, i: int, out: list[str]) -> int:
        """Not (or no longer) a block: what was held is ordinary text; rescan from i as text."""
        out.append(self._held)
        self._state, self._held = _TEXT, ""
        return i

    def _finish_block(self, raw: str, *, line: bool = False) -> None:
        self.extracted.append(Extracted(self._marker, raw, line))
        self._raw = []


def extract_blocks(text: str, markers: Iterable[str], line_markers: Iterable[str] = ()) -> tuple[str, list[Extracted]]:
    """One-shot form of MarkerStreamFilter: (text without blocks, blocks)."""
    f = MarkerStreamFilter(markers, line_markers)
    visible = f.feed(text) + f.close()
    return visible, f.extracted
