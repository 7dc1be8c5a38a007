"""Every expectation kind, holding and not, with why: checked on a turn's result."""
from __future__ import annotations

from typing import Any

import pytest

from chat.evals.expectations import expectations_check
from chat.evals.results import TurnResult
from chat.evals.spec import Expectations

TURN = TurnResult(
    message="q", answer="You have 3 research streams.\n\nOn **Home**", tools=["calculate", "search_articles"],
    suggested_values=[{"label": "a", "value": "a"}, {"label": "b", "value": "b"}], actions=["create_stream"],
    payload_type="research_stream_form", seconds=1.5,
)
FAILED = TURN.model_copy(update={"error": "provider_error", "error_message": "the model call failed", "answer": "", "tools": []})


def _results(turn: TurnResult = TURN, **expect: Any) -> dict[str, Any]:
    return {r.name: r for r in expectations_check(Expectations(**expect), turn)}


@pytest.mark.parametrize(("expect", "holds"), [
    ({"contains": ["3 RESEARCH", "on **home**"]}, True),  # case-insensitive
    ({"contains": ["3", "four"]}, False),
    ({"not_contains": ["four", "oncology"]}, True),
    ({"not_contains": ["STREAMS"]}, False),
    ({"matches": [r"\d+ research", r"^You"]}, True),
    ({"matches": [r"\d+ research", r"^On"]}, False),  # no flags: ^ is the start of the answer
    ({"tools": ["search_articles", "calculate"]}, True),  # any order
    ({"tools": ["calculate", "get_article"]}, False),
    ({"no_tools": True}, False),
    ({"suggested_values_min": 2}, True),
    ({"suggested_values_min": 3}, False),
    ({"actions": ["create_stream"]}, True),
    ({"actions": ["create_stream", "test_report"]}, False),
    ({"payload_type": "research_stream_form"}, True),
    ({"payload_type": "search_results"}, False),
    ({"max_seconds": 1.5}, True),
    ({"max_seconds": 1.4}, False),
])
def test_each_kind_holds_or_says_why_not(expect: dict[str, Any], holds: bool) -> None:
    kind = next(iter(expect))
    result = _results(**expect)[kind]
    assert result.passed is holds, result
    assert result.why


def test_the_reasons_name_what_is_missing() -> None:
    r = _results(contains=["3", "four"], not_contains=["streams"], tools=["get_article"], actions=["test_report"],
                 payload_type="search_results", suggested_values_min=5, matches=["^On"], max_seconds=1)
    assert r["contains"].why == "not in the answer: 'four'"
    assert r["not_contains"].why == "in the answer: 'streams'"
    assert r["matches"].why == "no match for '^On'"
    assert r["tools"].why == "not called: 'get_article' (called: 'calculate', 'search_articles')"
    assert r["actions"].why == "not offered: 'test_report' (offered: 'create_stream')"
    assert r["payload_type"].why == "the card is 'research_stream_form'"
    assert r["suggested_values_min"].why == "2 suggested value(s), at least 5 expected"
    assert r["max_seconds"].why == "took 1.50 s, at most 1 s expected"
    plain = TURN.model_copy(update={"tools": [], "payload_type": None, "actions": []})
    assert _results(plain, no_tools=True)["no_tools"].passed
    assert _results(plain, payload_type="search_results")["payload_type"].why == "the answer has no card"
    assert _results(plain, tools=["calculate"])["tools"].why == "not called: 'calculate' (called: none)"


def test_error_is_always_checked_absent_meaning_none() -> None:
    assert list(_results()) == ["error"] and _results()["error"].passed
    none_expected = _results(FAILED)["error"]
    assert not none_expected.passed and none_expected.why == "ended with error 'provider_error': the model call failed"
    assert _results(FAILED, error="provider_error")["error"].passed
    other = _results(FAILED, error="budget_exceeded")["error"]
    assert not other.passed and other.why.endswith("; 'budget_exceeded' expected")
    missing = _results(error="forbidden")["error"]
    assert not missing.passed and missing.why == "ended without error; 'forbidden' expected"
