"""`manage.py chat_eval`: bad input refused before any case runs (exit 2), the pass rate decides the exit code (0 or 1),
the reports are written and the table printed."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from chat.models import Conversation
from chat.providers.scripted import text

pytestmark = pytest.mark.django_db(transaction=True)


def _write(path: Path, *cases: dict[str, Any], name: str = "smoke") -> Path:
    path.write_text(json.dumps({"name": name, "cases": list(cases)}))
    return path


def _case(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "page": "home", "user": "ann", "turns": ["hi"], **fields}


def _eval(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("chat_eval", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _refused(*args: str) -> CommandError:
    with pytest.raises(CommandError) as caught:
        _eval(*args)
    return caught.value


def test_a_bad_file_is_refused_before_any_case_runs(tmp_path: Path, user: Any, scripted: Any) -> None:
    good = _write(tmp_path / "good.json", _case("fine"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ncases:\n  - name: typo\n    page: home\n    user: ann\n    turns: [hi]\n    expect: {error: forbiden}\n")
    refused = _refused(str(good), str(bad))
    assert refused.returncode == 2
    assert f"{bad}: case \"typo\" (cases[0]), expect.error: 'forbiden' is not an error code" in str(refused)
    assert not Conversation.objects.exists() and not scripted.requests


@pytest.mark.parametrize(("args", "says"), [
    (["--provider", "nope"], "unknown provider"),
    (["--judge-provider", "no.such.Judge"], "unknown provider"),
    (["--repeat", "0"], "--repeat must be at least 1"),
])
def test_bad_options_are_refused_before_any_case_runs(tmp_path: Path, user: Any, args: list[str], says: str) -> None:
    refused = _refused(str(_write(tmp_path / "s.json", _case("fine"))), *args)
    assert refused.returncode == 2 and says in str(refused)
    assert not Conversation.objects.exists()


def test_an_unknown_user_is_refused_before_any_case_runs(tmp_path: Path, user: Any) -> None:
    refused = _refused(str(_write(tmp_path / "s.json", _case("fine"), _case("who", user="nobody"))))
    assert refused.returncode == 2 and "case \"who\" (cases[1]), user: no user 'nobody'" in str(refused)
    assert not Conversation.objects.exists()


def test_the_pass_rate_decides_the_exit_code(tmp_path: Path, user: Any, scripted: Any) -> None:
    path = str(_write(tmp_path / "s.json", _case("says yes", expect={"contains": ["yes"]}), _case("says no", expect={"contains": ["no"]})))
    scripted.enqueue(text("yes"), text("yes"))
    refused = _refused(path, "--provider", "scripted")
    assert refused.returncode == 1 and str(refused) == "the pass rate 50.0% is below 100.0%"
    scripted.enqueue(text("yes"), text("yes"))
    out, err = _eval(path, "--provider", "scripted", "--min-pass-rate", "0.5")
    assert "50.0%  (1 of 2 runs passed; needs 50%)  OK" in out and "[2/2] FAIL smoke / says no" in err
    # --repeat: every run counts
    scripted.enqueue(text("yes"), text("no"), text("no"), text("no"))
    out, _ = _eval(path, "--provider", "scripted", "--repeat", "2", "--min-pass-rate", "0.75")
    assert "75.0%  (3 of 4 runs passed; needs 75%)  OK" in out
    scripted.enqueue(text("yes"), text("no"), text("no"), text("no"))
    assert _refused(path, "--provider", "scripted", "--repeat", "2", "--min-pass-rate", "0.8").returncode == 1
    with pytest.raises(CommandError, match="--min-pass-rate: invalid"):
        _eval(path, "--min-pass-rate", "1.5")


def test_only_skipped_runs_do_not_pass(tmp_path: Path, user: Any) -> None:
    refused = _refused(str(_write(tmp_path / "s.json", _case("judged", judge="polite"))))
    assert refused.returncode == 1 and str(refused) == "no run was scored"


def test_the_reports_are_written_and_the_table_printed(tmp_path: Path, user: Any, scripted: Any) -> None:
    path = str(_write(tmp_path / "s.json", _case("counts", expect={"contains": ["3"]}), _case("judged", judge="polite")))
    scripted.enqueue(text("You have 3 streams."), text("Hello there."), text('{"score": 1, "reason": "Polite."}'))  # the judge's last
    report_path, junit_path = tmp_path / "out" / "r.json", tmp_path / "j.xml"
    report_path.parent.mkdir()
    out, err = _eval(path, "--provider", "scripted", "--judge-provider", "scripted", "--model", "m-1",
                     "--json", str(report_path), "--junit", str(junit_path))
    report = json.loads(report_path.read_text())
    assert (report["ok"], report["model"], report["judge_provider"], [c["status"] for c in report["cases"]]) == (True, "m-1", "scripted", ["passed", "passed"])
    assert report["cases"][0]["runs"][0]["answer"] == "You have 3 streams."
    assert report["cases"][1]["runs"][0]["judge"]["reason"] == "Polite."
    suite = ET.parse(junit_path).getroot().find("testsuite")
    assert suite is not None and (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("smoke", "2", "0")
    assert out.splitlines()[1].split()[:4] == ["PASS", "smoke", "/", "counts"]
    assert out.splitlines()[-1].startswith("Pass rate  " + "█" * 30 + "  100.0%")
    assert "scripted (m-1)" in out and "judge: scripted" in out
    assert [line.split(" (")[0] for line in err.splitlines()] == ["[1/2] pass smoke / counts", "[2/2] pass smoke / judged"]
