# tests/test_assistant_evals.py, with `pytest_plugins = ["chat.evals.pytest_plugin"]` in the root conftest.py
from pathlib import Path

import pytest

from chat.evals.pytest_plugin import eval_cases
from chat.providers.scripted import ScriptedProvider, text

SMOKE = Path(__file__).parent / "smoke.yaml"


@pytest.fixture
def eval_users(django_user_model):
    """The users the cases run as: their permissions and data apply."""
    django_user_model.objects.create_user(username="ann", password="pw")


@pytest.mark.parametrize("eval_case", eval_cases(SMOKE))  # one test per case
def test_smoke_case(pagechat_eval, eval_users, eval_case):
    pagechat_eval.check(eval_case, provider="offline")


def test_a_case_with_a_scripted_model(pagechat_eval, eval_users):
    ScriptedProvider.enqueue(text("You have no research streams yet."))
    report = pagechat_eval.check(SMOKE, case="counts streams", provider="scripted")
    assert report.cases[0].runs[0].answer == "You have no research streams yet."
