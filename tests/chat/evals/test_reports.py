"""The reports: JSON with every case's runs and why, JUnit XML that parses as JUnit, the table with its pass-rate bar."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from chat.evals.reports import pass_rate_bar, report_json, report_junit, report_table
from chat.evals.results import CaseResult, CaseRun, EvalReport, ExpectationResult, JudgeResult, Tokens

PASSED = CaseRun(status="passed", answer="You have 3 streams.", tools=["calculate"], seconds=0.5, tokens=Tokens(input=100, output=20),
                 cost_usd=0.001, expectations=[ExpectationResult(name="contains", passed=True, expected=["3"], why="all in the answer")])
FAILED = CaseRun(attempt=2, status="failed", answer="No idea <&>", seconds=0.25, tokens=Tokens(input=50, output=5), cost_usd=None,
                 expectations=[ExpectationResult(name="contains", passed=False, expected=["3"], why="not in the answer: '3'"),
                               ExpectationResult(name="error", passed=True, why="ended without error")],
                 judge=JudgeResult(passed=False, score=0.25, min_score=0.7, reason="It does not say.", provider="scripted", model="m"))
SKIPPED = CaseRun(status="skipped", skip_reason="a judged case, and no judge provider")


def _report(repeat: int = 2) -> EvalReport:
    return EvalReport(
        sets=["smoke", "other"], sources=["evals/smoke.yaml"], provider="offline", model="pagechat-offline", repeat=repeat, min_pass_rate=0.5,
        started_at=datetime(2026, 1, 2, tzinfo=UTC), seconds=1.25,
        cases=[CaseResult(set="smoke", name="counts", status="failed", passed=False, runs=[PASSED, FAILED]),
               CaseResult(set="other", name="judged", status="skipped", passed=False, runs=[SKIPPED, SKIPPED.model_copy(update={"attempt": 2})])],
    ).finish()


def test_the_totals_count_runs_and_skipped_ones_are_not_scored() -> None:
    report = _report()
    assert (report.passed, report.failed, report.skipped, report.pass_rate, report.ok) == (1, 1, 2, 0.5, True)
    assert report.tokens == Tokens(input=150, output=25) and report.cost_usd is None  # one run's cost is unknown


def test_json_has_per_case_every_expectation_and_why_the_answer_tools_time_tokens_and_cost() -> None:
    data = json.loads(report_json(_report()))
    assert (data["pass_rate"], data["ok"], data["provider"]) == (0.5, True, "offline")
    case = data["cases"][0]
    assert (case["name"], case["set"], case["passed"], case["status"]) == ("counts", "smoke", False, "failed")
    run = case["runs"][1]
    assert run["expectations"][0] == {"name": "contains", "passed": False, "expected": ["3"], "actual": None, "why": "not in the answer: '3'"}
    assert run["judge"]["score"] == 0.25 and run["judge"]["reason"] == "It does not say."
    first = case["runs"][0]
    assert (first["answer"], first["tools"], first["seconds"], first["tokens"]["input"], first["cost_usd"]) == (
        "You have 3 streams.", ["calculate"], 0.5, 100, 0.001)
    assert data["cases"][1]["runs"][0]["skip_reason"] == "a judged case, and no judge provider"


def test_junit_is_valid_junit_xml() -> None:
    xml = report_junit(_report())
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(xml.split("\n", 1)[1])
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("4", "1", "2", "0")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["smoke", "other"]
    for suite in suites:
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases)
        assert int(suite.get("failures", "-1")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("skipped", "-1")) == sum(c.find("skipped") is not None for c in cases)
        for case in cases:
            assert case.get("classname") == suite.get("name") and case.get("name") and float(case.get("time", "x")) >= 0
            assert {child.tag for child in case} <= {"failure", "skipped", "system-out"}
    smoke = suites[0].findall("testcase")
    assert [c.get("name") for c in smoke] == ["counts [1/2]", "counts [2/2]"]  # one test case per run
    failure = smoke[1].find("failure")
    assert failure is not None and failure.get("message") == "contains: not in the answer: '3'"
    assert failure.text == "contains: not in the answer: '3'\njudge (score 0.25 < 0.7): It does not say."
    out = smoke[1].find("system-out")
    assert out is not None and out.text == "No idea <&>"  # escaped in the file, itself when read
    skipped = suites[1].findall("testcase")[0].find("skipped")
    assert skipped is not None and skipped.get("message") == "a judged case, and no judge provider"
    assert next(ET.fromstring(report_junit(_report(repeat=1)).split("\n", 1)[1]).iter("testcase")).get("name") == "counts"


def test_the_table_shows_each_case_why_runs_failed_and_the_pass_rate_bar() -> None:
    table = report_table(_report())
    lines = table.splitlines()
    assert lines[0].split() == ["result", "case", "passed", "time", "tokens", "cost"]
    assert lines[1].split()[:5] == ["FAIL", "smoke", "/", "counts", "1/2"] and lines[1].endswith("—")  # a cost unknown
    assert lines[2].split()[:4] == ["SKIP", "other", "/", "judged"]
    assert "    contains: not in the answer: '3'" in lines and "    answer: No idea <&>" in lines
    assert "judged (other): skipped: a judged case, and no judge provider" in lines
    assert lines[-1] == f"Pass rate  {'█' * 15}{'░' * 15}  50.0%  (1 of 2 runs passed, 2 skipped; needs 50%)  OK"
    assert report_table(_report(), ascii_only=True).splitlines()[-1].startswith(f"Pass rate  {'#' * 15}{'.' * 15}  50.0%")


def test_the_bar() -> None:
    assert pass_rate_bar(1.0, 4) == "████" and pass_rate_bar(0.0, 4) == "░░░░" and pass_rate_bar(None, 4) == "░░░░"
    assert pass_rate_bar(2 / 3, 3, ascii_only=True) == "##."
