"""The expectations of a case, checked on its last turn: each one given gives a result saying why it held or not."""
from __future__ import annotations

import re

from chat.evals.results import ExpectationResult, TurnResult
from chat.evals.spec import Expectations


def _quoted(items: list[str]) -> str:
    return ", ".join(repr(i) for i in items)


def expectations_check(expect: Expectations, turn: TurnResult) -> list[ExpectationResult]:
    """One result per expectation kind given (`error` always: absent, the turn must not end with an error)."""
    results: list[ExpectationResult] = []
    answer = turn.answer.casefold()
    if expect.contains:
        missing = [s for s in expect.contains if s.casefold() not in answer]
        results.append(ExpectationResult(name="contains", passed=not missing, expected=expect.contains,
                                         why=f"not in the answer: {_quoted(missing)}" if missing else "all in the answer"))
    if expect.not_contains:
        found = [s for s in expect.not_contains if s.casefold() in answer]
        results.append(ExpectationResult(name="not_contains", passed=not found, expected=expect.not_contains,
                                         why=f"in the answer: {_quoted(found)}" if found else "none in the answer"))
    if expect.matches:
        unmatched = [p for p in expect.matches if re.search(p, turn.answer) is None]
        results.append(ExpectationResult(name="matches", passed=not unmatched, expected=expect.matches,
                                         why=f"no match for {_quoted(unmatched)}" if unmatched else "every pattern matches"))
    if expect.tools:
        uncalled = [t for t in expect.tools if t not in turn.tools]
        results.append(ExpectationResult(
            name="tools", passed=not uncalled, expected=expect.tools, actual=turn.tools,
            why=f"not called: {_quoted(uncalled)} (called: {_quoted(turn.tools) or 'none'})" if uncalled else "all called"))
    if expect.no_tools:
        results.append(ExpectationResult(name="no_tools", passed=not turn.tools, expected=[], actual=turn.tools,
                                         why=f"called: {_quoted(turn.tools)}" if turn.tools else "no tool called"))
    if expect.suggested_values_min is not None:
        count = len(turn.suggested_values)
        results.append(ExpectationResult(
            name="suggested_values_min", passed=count >= expect.suggested_values_min, expected=expect.suggested_values_min,
            actual=count, why=f"{count} suggested value(s), at least {expect.suggested_values_min} expected"))
    if expect.actions:
        absent = [a for a in expect.actions if a not in turn.actions]
        results.append(ExpectationResult(
            name="actions", passed=not absent, expected=expect.actions, actual=turn.actions,
            why=f"not offered: {_quoted(absent)} (offered: {_quoted(turn.actions) or 'none'})" if absent else "all offered"))
    if expect.payload_type is not None:
        same = turn.payload_type == expect.payload_type
        results.append(ExpectationResult(
            name="payload_type", passed=same, expected=expect.payload_type, actual=turn.payload_type,
            why=f"the card is {turn.payload_type!r}" if turn.payload_type else "the answer has no card"))
    results.append(_error_check(expect.error, turn))
    if expect.max_seconds is not None:
        results.append(ExpectationResult(
            name="max_seconds", passed=turn.seconds <= expect.max_seconds, expected=expect.max_seconds, actual=round(turn.seconds, 3),
            why=f"took {turn.seconds:.2f} s, at most {expect.max_seconds:g} s expected"))
    return results


def _error_check(expected: str | None, turn: TurnResult) -> ExpectationResult:
    ended = f"ended with error {turn.error!r}" + (f": {turn.error_message}" if turn.error_message else "") if turn.error else "ended without error"
    if expected is None:
        return ExpectationResult(name="error", passed=turn.error is None, expected=None, actual=turn.error, why=ended)
    return ExpectationResult(name="error", passed=turn.error == expected, expected=expected, actual=turn.error,
                             why=ended + ("" if turn.error == expected else f"; {expected!r} expected"))
