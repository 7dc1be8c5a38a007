"""The eval file format: YAML and JSON read into typed models; a bad file names the file, the case and the field."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chat.evals.spec import EvalSpecError, eval_set_load, eval_set_parse, eval_sets_load

ISSUE_EXAMPLE = """
name: demo-smoke
cases:
  - name: counts streams
    page: home                      # a registered page
    context: {}                     # merged into the page context
    user: demo                      # an existing username (its permissions and data apply)
    turns:                          # one or more, in order; fields as the protocol names them
      - message: How many streams do I have?          # interaction_type text_input by default
      - {message: oncology research, interaction_type: value_selected}    # a chip
      - {message: Accept & Create, interaction_type: action_executed, action: create_stream}
    expect:                         # all optional; every one given must hold for the LAST turn
      contains: ["3"]               # case-insensitive substrings of the answer text
      not_contains: []
      matches: []                   # regular expressions
      tools: [calculate]            # tools called in the turn (names), in any order
      no_tools: false
      suggested_values_min: 0
      actions: [create_stream]      # server actions offered
      payload_type: research_stream_form
      error: null                   # an error code the turn must end with
      max_seconds: 30
    judge: "Answers with the number of the user's streams and nothing invented."   # optional
"""


def _case(**fields: Any) -> dict[str, Any]:
    return {"name": "c1", "page": "home", "user": "demo", "turns": ["hello"], **fields}


def _problems(data: Any) -> list[str]:
    with pytest.raises(EvalSpecError) as caught:
        eval_set_parse(data, source="set.yaml")
    return caught.value.problems


def test_the_issues_example_reads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "smoke.yaml"
    path.write_text(ISSUE_EXAMPLE)
    parsed = eval_set_load(path)
    assert (parsed.name, parsed.source) == ("demo-smoke", str(path))
    case = parsed.cases[0]
    assert [t.interaction_type for t in case.turns] == ["text_input", "value_selected", "action_executed"]
    assert case.turns[2].action == "create_stream" and case.turns[0].approve is False
    assert case.expect.contains == ["3"] and case.expect.tools == ["calculate"] and case.expect.error is None
    assert case.expect.max_seconds == 30 and case.expect.payload_type == "research_stream_form"
    assert case.judge is not None and case.judge.criteria.startswith("Answers with") and case.judge.min_score == 0.7
    assert case.page_context(case.turns[0]) == {"current_page": "home"}


def test_json_is_accepted_and_shorthands_expand(tmp_path: Path) -> None:
    data = {"name": "j", "cases": [_case(context={"tab": "a"}, turns=["hi", {"action": "create_stream", "context": {"tab": "b"}}],
                                         expect={"contains": "one string"}, judge={"criteria": "polite", "min_score": 0.9})]}
    path = tmp_path / "set.json"
    path.write_text(json.dumps(data))
    case = eval_set_load(path).cases[0]
    assert case.turns[0].message == "hi"
    assert (case.turns[1].interaction_type, case.turns[1].message) == ("action_executed", "")  # naming an action is clicking it
    assert case.page_context(case.turns[1]) == {"tab": "b", "current_page": "home"}
    assert case.expect.contains == ["one string"] and case.judge is not None and case.judge.min_score == 0.9


@pytest.mark.parametrize(("case", "expected"), [
    (_case(page="nope"), 'set.yaml: case "c1" (cases[0]), page: no page \'nope\' is registered'),
    (_case(user=""), 'set.yaml: case "c1" (cases[0]), user: String should have at least 1 character'),
    (_case(turns=[]), 'set.yaml: case "c1" (cases[0]), turns: List should have at least 1 item'),
    (_case(turns=["hi", {"message": " "}]), 'set.yaml: case "c1" (cases[0]), turns[1]: `message` is empty'),
    (_case(turns=["hi", {"message": "x", "interaction_type": "clicked"}]),
     'set.yaml: case "c1" (cases[0]), turns[1].interaction_type: Input should be'),
    (_case(turns=[{"action": "create_stream"}]), 'set.yaml: case "c1" (cases[0]): turns[0]: the first turn cannot click an action'),
    (_case(turns=["hi", {"action": "create_strem"}]),
     "set.yaml: case \"c1\" (cases[0]): turns[1].action: the page 'home' has no server action 'create_strem' (it has: create_stream"),
    (_case(turns=["hi", {"message": "x", "interaction_type": "action_executed"}]),
     'set.yaml: case "c1" (cases[0]), turns[1]: an action_executed turn names its `action`'),
    (_case(turns=["hi", {"message": "x", "interaction_type": "value_selected", "action": "create_stream"}]),
     'set.yaml: case "c1" (cases[0]), turns[1]: `action` is a click on a server action'),
    (_case(turns=[{"message": "x", "language": "not a tag"}]), 'set.yaml: case "c1" (cases[0]), turns[0].language: String should match'),
    (_case(expect={"matches": ["ok", "(unclosed"]}), "set.yaml: case \"c1\" (cases[0]), expect.matches: [1] '(unclosed' is not a regular expression"),
    (_case(expect={"error": "bugdet_exceeded"}), "set.yaml: case \"c1\" (cases[0]), expect.error: 'bugdet_exceeded' is not an error code"),
    (_case(expect={"payload_type": "no_such_card"}), "set.yaml: case \"c1\" (cases[0]), expect.payload_type: no payload type 'no_such_card' is registered"),
    (_case(expect={"suggested_values_min": -1}), 'set.yaml: case "c1" (cases[0]), expect.suggested_values_min: Input should be greater than or equal to 0'),
    (_case(expect={"max_seconds": 0}), 'set.yaml: case "c1" (cases[0]), expect.max_seconds: Input should be greater than 0'),
    (_case(expect={"tools": ["calculate"], "no_tools": True}), 'set.yaml: case "c1" (cases[0]), expect: `no_tools` and `tools` contradict'),
    (_case(expect={"contain": ["x"]}), 'set.yaml: case "c1" (cases[0]), expect.contain: unknown field'),
    (_case(expects={"contains": ["x"]}), 'set.yaml: case "c1" (cases[0]), expects: unknown field'),
    (_case(context={"current_page": "reports"}), 'set.yaml: case "c1" (cases[0]), context: `current_page` is the case\'s `page`'),
    (_case(judge={"criteria": "x", "min_score": 2}), 'set.yaml: case "c1" (cases[0]), judge.min_score: Input should be less than or equal to 1'),
    ({"page": "home", "user": "demo", "turns": ["hi"]}, 'set.yaml: case (no name) (cases[0]), name: Field required'),
])
def test_a_bad_case_names_the_file_the_case_and_the_field(case: dict[str, Any], expected: str) -> None:
    problems = _problems({"name": "s", "cases": [_case(name="fine"), case]})
    assert len(problems) == 1, problems
    assert problems[0].replace("cases[1]", "cases[0]").startswith(expected), problems[0]


def test_every_problem_of_a_set_is_reported_at_once() -> None:
    problems = _problems({"cases": [_case(page="nope"), _case(name="c2", expect={"error": "oops"}), _case(name="c1")]})
    assert problems[0] == "set.yaml: name: Field required"
    assert any('case "c1" (cases[0]), page' in p for p in problems)
    assert any('case "c2" (cases[1]), expect.error' in p for p in problems)
    assert any("cases[2]: another case is already named 'c1'" in p for p in problems)


def test_a_set_needs_its_name_and_cases() -> None:
    assert _problems({"name": "s", "cases": []})[0].startswith("set.yaml: cases: List should have at least 1 item")
    assert _problems(["not", "a", "mapping"])[0].startswith("set.yaml: Input should be a valid dictionary")
    assert _problems({"name": "s", "cases": [_case()], "source": "x"}) == ["set.yaml: `source` is not a field of an eval set"]
    assert _problems({"name": "s", "cases": [_case(), _case()]}) == [
        "set.yaml: cases[1]: another case is already named 'c1' (names identify cases in reports)"]


def test_unreadable_files_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    (tmp_path / "bad.json").write_text("{'single': 1}")
    (tmp_path / "ok.yml").write_text(json.dumps({"name": "ok", "cases": [_case()]}))
    (tmp_path / "notes.txt").write_text("not an eval file")
    with pytest.raises(EvalSpecError) as caught:
        eval_sets_load([tmp_path, tmp_path / "missing.yaml"])
    problems = caught.value.problems
    assert f"{tmp_path / 'missing.yaml'}: no such file or directory" in problems
    assert any(p.startswith(f"{tmp_path / 'bad.json'}: not valid JSON") for p in problems)
    assert any(p.startswith(f"{tmp_path / 'bad.yaml'}: not valid YAML") and "line 1" in p for p in problems)
    assert len(problems) == 3  # ok.yml is fine, notes.txt is not an eval file
    (tmp_path / "bad.yaml").unlink()
    (tmp_path / "bad.json").unlink()
    assert [s.name for s in eval_sets_load([tmp_path])] == ["ok"]
    with pytest.raises(EvalSpecError, match="no eval files"):
        eval_sets_load([tmp_path / "empty"] if (tmp_path / "empty").mkdir() is None else [])


def test_only_keeps_the_named_cases() -> None:
    parsed = eval_set_parse({"name": "s", "cases": [_case(), _case(name="c2")]})
    assert [c.name for c in parsed.only("c2").cases] == ["c2"]
    with pytest.raises(KeyError, match="no case named 'c3'"):
        parsed.only("c3")


def test_the_demo_set_is_valid() -> None:
    demo = eval_set_load(Path(__file__).resolve().parents[3] / "evals" / "demo.yaml")
    assert demo.name == "demo" and len(demo.cases) >= 10
    pages = {c.page for c in demo.cases}
    assert {"home", "reports", "new_stream", "streams_list"} <= pages
