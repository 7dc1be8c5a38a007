"""The pytest plugin: `eval_cases` parametrizes a test per case, `pagechat_eval` runs them and fails or skips the test;
docs/evals.md's example is this suite's own test_docs_example.py."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from chat.evals.pytest_plugin import EvalFixture, eval_cases
from chat.evals.spec import EvalSpecError
from chat.models import Conversation

HERE = Path(__file__).parent
DOCS = HERE.parents[2] / "docs" / "evals.md"


def test_the_docs_example_is_the_test_this_suite_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    example = (HERE / "test_docs_example.py").read_text()
    assert example in blocks, "docs/evals.md shows tests/chat/evals/test_docs_example.py as it is"
    assert 'pytest_plugins = ["chat.evals.pytest_plugin"]' in DOCS.read_text()


def test_eval_cases_gives_one_param_per_case_holding_that_case_only(tmp_path: Path) -> None:
    params = eval_cases(HERE / "smoke.yaml")
    assert [p.id for p in params] == ["smoke/counts streams", "smoke/calculates"]
    assert [[c.name for c in p.values[0].cases] for p in params] == [["counts streams"], ["calculates"]]
    (tmp_path / "bad.yaml").write_text("name: bad\ncases: [{name: x, page: nowhere, user: ann, turns: [hi]}]\n")
    with pytest.raises(EvalSpecError, match=r"bad.yaml: case \"x\" \(cases\[0\]\), page: no page 'nowhere'"):
        eval_cases(tmp_path / "bad.yaml")


@pytest.mark.django_db(transaction=True)
def test_check_fails_the_test_with_why_and_skips_what_no_judge_can_grade(pagechat_eval: EvalFixture, user: Any, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("name: wrong\ncases: [{name: seven, page: home, user: ann, turns: [calculate 6*7], expect: {contains: ['49']}}]\n")
    with pytest.raises(pytest.fail.Exception) as failed:
        pagechat_eval.check(wrong, provider="offline")
    assert "FAIL    wrong / seven" in str(failed.value) and "contains: not in the answer: '49'" in str(failed.value)
    report = pagechat_eval.run(wrong, provider="offline")  # run reports, never fails the test
    assert report.failed == 1 and not report.ok
    judged = tmp_path / "judged.yaml"
    judged.write_text("name: judged\ncases: [{name: polite, page: home, user: ann, turns: [hello], judge: Polite.}]\n")
    with pytest.raises(pytest.skip.Exception, match="no judge provider"):
        pagechat_eval.check(judged)
    with pytest.raises(KeyError, match="no case named 'nope'"):
        pagechat_eval.run(judged, case="nope")
    assert Conversation.objects.filter(owner=user, is_eval=True).count() == 2


@pytest.mark.django_db(transaction=True)
async def test_async_tests_await_it(pagechat_eval: EvalFixture, user: Any) -> None:
    report = await pagechat_eval.check_async([HERE / "smoke.yaml"], case="calculates", provider="offline")
    assert [c.name for c in report.cases] == ["calculates"] and report.cases[0].runs[0].tools == ["calculate"]
