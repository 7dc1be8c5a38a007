"""The judge: what it is shown, how its reply is read (never a pass without the JSON asked for), how it is configured."""
from __future__ import annotations

from typing import Any

import pytest

from chat.checks import check_chat_settings
from chat.evals.judge import judge_prompt, provider_class, verdict_parse
from chat.evals.results import TurnResult
from chat.evals.spec import JudgeSpec
from chat.providers.offline import OfflineProvider


@pytest.mark.parametrize(("reply", "score", "reason"), [
    ('{"score": 0.8, "reason": "Gives the number."}', 0.8, "Gives the number."),
    ('```json\n{"score": 1, "reason": "ok"}\n```', 1.0, "ok"),
    ('{"score": 0}', 0.0, "(no reason given)"),
    ("Great answer!", None, "the judge's reply is not the JSON object asked for: Great answer!"),
    ('{"score": "high", "reason": "x"}', None, "the judge's score is not a number from 0 to 1"),
    ('{"score": 7, "reason": "out of 10"}', None, "the judge's score is not a number from 0 to 1"),
    ('{"score": true, "reason": "x"}', None, "the judge's score is not a number from 0 to 1"),
    ('{"score": 0.5, "reason": "unclosed"', None, "the judge's reply is not the JSON object asked for"),
    ("", None, "the judge's reply is not the JSON object asked for: (nothing)"),
])
def test_a_reply_is_a_score_from_0_to_1_and_a_reason_or_no_score(reply: str, score: float | None, reason: str) -> None:
    got_score, got_reason = verdict_parse(reply)
    assert got_score == score and got_reason.startswith(reason)


def test_the_judge_reads_the_criteria_and_the_whole_conversation() -> None:
    turns = [TurnResult(message="make a stream", answer="Here is a form."),
             TurnResult(message="Accept", action="create_stream", answer="Created it.", tools=["calculate"], error="internal")]
    prompt = judge_prompt(JudgeSpec(criteria="Creates the stream."), turns)
    assert prompt.startswith("CRITERIA:\nCreates the stream.\n\nCONVERSATION:\nUser: make a stream\nAssistant: Here is a form.\n")
    assert "User: Accept (clicked the button 'create_stream')\n(The assistant called: calculate)\nAssistant: Created it." in prompt
    assert "(The turn ended with the error 'internal'.)" in prompt and prompt.endswith("Grade the assistant's LAST answer against the criteria.")


def test_providers_are_named_as_chat_provider_names_them() -> None:
    assert provider_class("offline") is OfflineProvider
    assert provider_class("chat.providers.offline.OfflineProvider") is OfflineProvider
    for bad in ("nope", "chat.providers.offline.MODEL_NAME", "no.such.Provider"):
        with pytest.raises(ImportError):
            provider_class(bad)


def test_manage_py_check_reports_a_judge_provider_that_does_not_import(settings: Any) -> None:
    settings.CHAT_EVAL_JUDGE_PROVIDER = "scripted"
    assert check_chat_settings() == []
    settings.CHAT_EVAL_JUDGE_PROVIDER = "chat.providers.nowhere.Judge"
    assert [m.id for m in check_chat_settings()] == ["chat.E003"]
    settings.CHAT_EVAL_JUDGE_PROVIDER = "chat.conf.ChatSettings"
    assert [m.id for m in check_chat_settings()] == ["chat.E004"]
