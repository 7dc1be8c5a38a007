"""The invariants of DESIGN.md §8 "Nothing lost", checked after every fault.

Pure functions over what clients received (RunTrace) and what the database holds (plain dicts, so the
same checks run on the ORM in-process and on a PostgreSQL dump from a multi-process cluster).
Every check appends to FIGURES, reported at the end of the session (tests/conftest.py, summed over xdist workers).
"""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.protocol import check_event

TERMINAL = frozenset({"complete", "error", "cancelled"})


# ---- figures --------------------------------------------------------------------------------------


@dataclass
class Figures:
    """Counts for the closing report: trials, events checked and what was found wrong."""

    trials: Counter[str] = field(default_factory=Counter)
    events_checked: int = 0
    reconnects: int = 0
    resyncs: int = 0
    gaps: int = 0
    duplicates: int = 0
    missing_terminal: int = 0
    text_mismatches: int = 0
    history_invalid: int = 0
    notes: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def trial(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.trials[kind] += n

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def merge(self, other: dict[str, Any]) -> None:
        """Add another process's figures (`as_dict()` of an xdist worker's) to these."""
        with self._lock:
            self.trials.update(other.get("trials", {}))
            for name in ("events_checked", "reconnects", "resyncs", "gaps", "duplicates", "missing_terminal",
                         "text_mismatches", "history_invalid"):
                setattr(self, name, getattr(self, name) + other.get(name, 0))
            self.notes.extend(other.get("notes", []))

    @property
    def losses(self) -> int:
        return self.gaps + self.missing_terminal + self.text_mismatches

    def summary(self) -> str:
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(self.trials.items())) or "none"
        return (f"resilience figures: trials {sum(self.trials.values())} ({kinds}); events checked {self.events_checked}; "
                f"reconnects {self.reconnects}; resyncs {self.resyncs}; losses {self.losses} (gaps {self.gaps}, "
                f"missing terminal {self.missing_terminal}, text mismatches {self.text_mismatches}); "
                f"duplicates {self.duplicates}; invalid histories {self.history_invalid}")

    def as_dict(self) -> dict[str, Any]:
        return {"trials": dict(self.trials), "events_checked": self.events_checked, "reconnects": self.reconnects,
                "resyncs": self.resyncs, "gaps": self.gaps, "duplicates": self.duplicates,
                "missing_terminal": self.missing_terminal, "text_mismatches": self.text_mismatches,
                "history_invalid": self.history_invalid, "losses": self.losses, "notes": self.notes[-50:]}


FIGURES = Figures()


class InvariantError(AssertionError):
    """An invariant of the run log, the persisted conversation or user isolation does not hold."""


# ---- what one client saw of one run, across reconnects --------------------------------------------


@dataclass
class RunTrace:
    """Events of one run as a client received them over any number of connections.

    The client resumes with after_seq = `last_seq`; anything else than last_seq + 1 is a gap or a duplicate."""

    run_id: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    resynced: bool = False
    connections: int = 1

    @property
    def last_seq(self) -> int:
        return self.events[-1]["seq"] if self.events else 0

    @property
    def done(self) -> bool:
        return bool(self.events) and self.events[-1]["type"] in TERMINAL

    @property
    def terminal(self) -> dict[str, Any] | None:
        return self.events[-1] if self.done else None

    def add(self, event: dict[str, Any]) -> bool:
        """Record a run event (one with a seq); False if it was not the next one (recorded as a problem)."""
        check_event(event)  # every traced frame matches the committed protocol schema
        if self.run_id is None:
            self.run_id = event.get("run_id")
        if event.get("run_id") != self.run_id:
            self.problems.append(f"event of run {event.get('run_id')} in the trace of {self.run_id}")
            return False
        seq = event.get("seq")
        if self.done:
            self.problems.append(f"seq {seq} ({event.get('type')}) after the terminal event")
            FIGURES.add(duplicates=1)
            return False
        if seq != self.last_seq + 1:
            if isinstance(seq, int) and seq <= self.last_seq:
                self.problems.append(f"duplicate seq {seq} (had up to {self.last_seq})")
                FIGURES.add(duplicates=1)
            else:
                self.problems.append(f"gap: seq {seq} after {self.last_seq}")
                FIGURES.add(gaps=1)
            return False
        self.events.append(event)
        self.arrivals.append(time.monotonic())
        return True

    def reconnected(self) -> None:
        self.connections += 1
        FIGURES.add(reconnects=1)

    @property
    def text(self) -> str:
        return "".join(e["text"] for e in self.events if e["type"] == "text_delta")

    def text_before(self, moment: float) -> str:
        """The streamed text that had arrived by `moment` (time.monotonic())."""
        return "".join(e["text"] for e, t in zip(self.events, self.arrivals) if e["type"] == "text_delta" and t <= moment)

    def check(self, *, complete: bool = True) -> None:
        """seq 1..N without gap or duplicate, exactly one terminal event, last (unless it was resynced)."""
        FIGURES.add(events_checked=len(self.events))
        if self.problems:
            raise InvariantError(f"run {self.run_id}: " + "; ".join(self.problems[:5]))
        seqs = [e["seq"] for e in self.events]
        if seqs != list(range(1, len(seqs) + 1)):
            FIGURES.add(gaps=1)
            raise InvariantError(f"run {self.run_id}: seqs are not 1..N: {seqs[:20]}")
        terminals = [e for e in self.events if e["type"] in TERMINAL]
        if self.resynced:
            return
        if complete and len(terminals) != 1:
            FIGURES.add(missing_terminal=1)
            raise InvariantError(f"run {self.run_id}: {len(terminals)} terminal events")
        if terminals and self.events[-1] is not terminals[0]:
            raise InvariantError(f"run {self.run_id}: the terminal event is not the last")
        if self.events and self.events[0]["type"] != "status":
            raise InvariantError(f"run {self.run_id}: the first event is {self.events[0]['type']}, not the status ack")


# ---- provider message history -------------------------------------------------------------------


def assert_valid_history(messages: list[dict[str, Any]]) -> None:
    """What the Messages API accepts: starts with user, roles alternate, every tool_use answered by a
    tool_result in the very next (user) message, every tool_result answers one, no empty text."""
    try:
        _check_history(messages)
    except InvariantError:
        FIGURES.add(history_invalid=1)
        raise


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _check_history(messages: list[dict[str, Any]]) -> None:
    if not messages or messages[0].get("role") != "user":
        raise InvariantError("history must start with a user message")
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role not in ("user", "assistant"):
            raise InvariantError(f"message {i}: role {role!r}")
        if i and messages[i - 1]["role"] == role:
            raise InvariantError(f"messages {i - 1} and {i} are both {role}")
        blocks = _blocks(msg.get("content"))
        if not blocks:
            raise InvariantError(f"message {i} ({role}) is empty")
        for b in blocks:
            if b.get("type") == "text" and not str(b.get("text", "")).strip():
                raise InvariantError(f"message {i} has an empty text block")
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if uses and role != "assistant":
            raise InvariantError(f"message {i}: tool_use in a {role} message")
        if len(set(uses)) != len(uses):
            raise InvariantError(f"message {i}: repeated tool_use id")
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if results:
            if role != "user":
                raise InvariantError(f"message {i}: tool_result in an assistant message")
            prev = _blocks(messages[i - 1].get("content")) if i else []
            asked = {b["id"] for b in prev if b.get("type") == "tool_use"}
            if not set(results) <= asked:
                raise InvariantError(f"message {i}: tool_result for {set(results) - asked}, not asked just before")
            first_other = next((k for k, b in enumerate(blocks) if b.get("type") != "tool_result"), len(blocks))
            if any(b.get("type") == "tool_result" for b in blocks[first_other:]):
                raise InvariantError(f"message {i}: tool_result blocks must come first")
        if uses:
            nxt = _blocks(messages[i + 1].get("content")) if i + 1 < len(messages) else []
            answered = {b.get("tool_use_id") for b in nxt if b.get("type") == "tool_result"}
            if set(uses) - answered:
                raise InvariantError(f"message {i}: tool_use {set(uses) - answered} without a tool_result")


# ---- the persisted state --------------------------------------------------------------------------


@dataclass
class DbState:
    """Rows as plain dicts: conversations {id, owner_id}, messages {...}, runs {...}."""

    conversations: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    runs: list[dict[str, Any]]

    def run(self, run_id: str) -> dict[str, Any]:
        for r in self.runs:
            if str(r["id"]) == str(run_id):
                return r
        raise InvariantError(f"run {run_id} is not stored")

    def message(self, message_id: int | None) -> dict[str, Any] | None:
        return next((m for m in self.messages if m["id"] == message_id), None)

    def assistant_of(self, run_id: str) -> dict[str, Any] | None:
        return next((m for m in self.messages if m["role"] == "assistant" and str(m.get("run_id")) == str(run_id)), None)


def db_state_orm() -> DbState:
    """The state through the ORM (in-process tests; call from sync code)."""
    from chat.models import Conversation, Message, Run

    return DbState(
        conversations=list(Conversation.objects.values("id", "owner_id")),
        messages=list(Message.objects.order_by("id").values(
            "id", "conversation_id", "role", "content", "status", "client_message_id", "provider_messages", "run_id")),
        runs=[{**r, "id": str(r["id"])} for r in Run.objects.values(
            "id", "conversation_id", "status", "error_code", "last_seq", "assistant_message_id", "user_message_id")],
    )


def db_state_sql(dsn: str) -> DbState:
    """The state straight from PostgreSQL (multi-process tests)."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        conversations = conn.execute("SELECT id, owner_id FROM pagechat_conversation").fetchall()
        messages = conn.execute(
            "SELECT id, conversation_id, role, content, status, client_message_id, provider_messages, run_id "
            "FROM pagechat_message ORDER BY id").fetchall()
        runs = conn.execute(
            "SELECT id::text AS id, conversation_id, status, error_code, last_seq, assistant_message_id, user_message_id "
            "FROM pagechat_run").fetchall()
    return DbState(conversations, messages, runs)


def check_db(state: DbState, *, acked: Iterable[tuple[int, str]] = ()) -> None:
    """Every acknowledged user message stored exactly once; at most one running run per conversation;
    the history each conversation would send next is valid (every tool_use paired)."""
    from chat.prompt.history import StoredMessage, history_build

    by_cmid = Counter((m["client_message_id"], _owner(state, m["conversation_id"])) for m in state.messages
                      if m["role"] == "user" and m["client_message_id"])
    for owner, cmid in acked:
        if by_cmid[(cmid, owner)] != 1:
            raise InvariantError(f"acknowledged message {cmid} stored {by_cmid[(cmid, owner)]} times")
    running = Counter(r["conversation_id"] for r in state.runs if r["status"] == "running")
    if running and max(running.values()) > 1:
        raise InvariantError(f"conversations with more than one running run: {[c for c, n in running.items() if n > 1]}")
    for conv in state.conversations:
        rows = [m for m in state.messages if m["conversation_id"] == conv["id"]]
        if not rows:
            continue
        stored = [StoredMessage(m["role"], m["content"], m["provider_messages"] or []) for m in rows]
        stored.append(StoredMessage("user", "next message"))
        assert_valid_history(history_build(stored, budget_tokens=10**9))


def _owner(state: DbState, conversation_id: int) -> int:
    return next(c["owner_id"] for c in state.conversations if c["id"] == conversation_id)


def check_persisted_text(state: DbState, trace: RunTrace, *, killed_at: float | None = None, window: float = 0.25,
                         slack: float = 0.5) -> str:
    """Completed (and cancelled/errored) runs: stored text == streamed text. Interrupted runs: stored text
    is a prefix of the streamed text, and everything streamed more than `window + slack` s before the kill
    is stored. Returns the run's stored status."""
    run = state.run(trace.run_id or "")
    msg = state.assistant_of(trace.run_id or "")
    stored = (msg or {}).get("content", "")
    streamed = trace.text
    if run["status"] == "running":
        raise InvariantError(f"run {trace.run_id} is still running")
    if run["status"] == "interrupted":
        if not streamed.startswith(stored):
            FIGURES.add(text_mismatches=1)
            raise InvariantError(f"run {trace.run_id}: stored text is not a prefix of the streamed text\n"
                                 f"stored:   {stored[-200:]!r}\nstreamed: {streamed[-200:]!r}")
        if killed_at is not None:
            must = trace.text_before(killed_at - window - slack)
            if not stored.startswith(must):
                FIGURES.add(text_mismatches=1)
                raise InvariantError(f"run {trace.run_id}: lost more than one flush window: stored {len(stored)} chars, "
                                     f"{len(must)} had been streamed {window + slack:.2f} s before the kill")
        FIGURES.notes.append(f"interrupted run: streamed {len(streamed)} chars, stored {len(stored)}")
        return run["status"]
    if trace.resynced:
        return run["status"]
    if stored != streamed:
        FIGURES.add(text_mismatches=1)
        raise InvariantError(f"run {trace.run_id} ({run['status']}): stored text != streamed text\n"
                             f"stored:   {stored[-200:]!r}\nstreamed: {streamed[-200:]!r}")
    term = trace.terminal
    if term is not None:
        expect = {"complete": "completed", "cancelled": "cancelled", "error": ("error", "interrupted")}[term["type"]]
        if run["status"] not in (expect if isinstance(expect, tuple) else (expect,)):
            raise InvariantError(f"run {trace.run_id}: terminal {term['type']} but stored status {run['status']}")
        if term["type"] == "complete" and term["payload"]["message"] != streamed:
            FIGURES.add(text_mismatches=1)
            raise InvariantError(f"run {trace.run_id}: complete.payload.message != streamed text")
    return run["status"]


def assert_no_foreign_bytes(responses: Iterable[Any], secrets: Iterable[str]) -> None:
    """None of another user's unique strings appears in anything this user received."""
    blob = "\n".join(r if isinstance(r, str) else r.decode("utf-8", "replace") if isinstance(r, bytes) else json.dumps(r, default=str)
                     for r in responses)
    for secret in secrets:
        if secret in blob:
            raise InvariantError(f"another user's data ({secret[:20]}…) reached this user")
