"""Citations: one numbering of the sources a turn's searches found (shared by its tool calls through the
ToolContext), and the `[[source:N]]` markers an answer points at them with, which never reach a client as written:
the live stream and the stored answer read `[N]`."""
from __future__ import annotations

import re
from typing import Any

from tools.sources.search import Hit

LEDGER_KEY = "source_ledger"  # ToolContext.services key of the turn's ledger
MARKER = re.compile(r"\[\[source:(\d{1,4})\]\]")
_PREFIX = "[[source:"


class SourceLedger:
    """The turn's sources in the order first found, numbered from 1; an object found again keeps its number."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._numbers: dict[tuple[str, str], int] = {}

    def add(self, hits: list[Hit]) -> list[dict[str, Any]]:
        """Number these hits (new ones get the next numbers) and return their entries in the hits' order."""
        out = []
        for hit in hits:
            key = (hit.source, hit.pk)
            n = self._numbers.get(key)
            if n is None:
                n = self._numbers[key] = len(self.entries) + 1
                self.entries.append({"n": n, "id": hit.pk, "title": hit.title, "url": hit.url, "snippet": hit.snippet, "source": hit.source})
            out.append(self.entries[n - 1])
        return out


def ledger_of(services: dict[str, Any]) -> SourceLedger:
    """The turn's ledger (made on first use: every tool call of the turn shares the ToolContext's services)."""
    ledger = services.get(LEDGER_KEY)
    if not isinstance(ledger, SourceLedger):
        ledger = services[LEDGER_KEY] = SourceLedger()
    return ledger


def markers_shown(text: str) -> str:
    """`[[source:N]]` written as the reference a reader sees: `[N]`."""
    return MARKER.sub(r"[\1]", text) if _PREFIX in text else text


class SourceMarkerFilter:
    """Streaming `markers_shown`: a marker split across deltas is held back until it is whole (or is not one)."""

    def __init__(self) -> None:
        self.held = ""

    def feed(self, text: str) -> str:
        text = self.held + text
        self.held = ""
        cut = text.rfind("[")
        while cut > 0 and text[cut - 1] == "[":  # the start of a possible "[[" marker
            cut -= 1
        if cut != -1:
            tail = text[cut:]
            if "]]" not in tail and (_PREFIX.startswith(tail) or (tail.startswith(_PREFIX) and re.fullmatch(r"\[\[source:\d{0,4}\]?", tail))):
                self.held, text = tail, text[:cut]
        return markers_shown(text)

    def close(self) -> str:
        held, self.held = self.held, ""
        return held
