"""Evals: sets of conversations run through the real engine and scored (docs/evals.md).

- `spec.py`          the file format (YAML or JSON) as typed models; `eval_sets_load`, `eval_set_parse`, `EvalSpecError`;
- `runner.py`        `eval_run` / `eval_run_async`: every case's turns through `chat.services.turn_start`, as its user;
- `expectations.py`  the checks on a case's last turn, each with why it held or not;
- `judge.py`         the LLM judge (a provider by setting): a score and a reason;
- `results.py`       what a run found (`EvalReport`, the JSON report's models);
- `reports.py`       the report as JSON, JUnit XML and the command's table;
- `pytest_plugin.py` the `pagechat_eval` fixture and `eval_cases` for a host's own tests.
Nothing is imported here: the pytest plugin loads this package before Django is set up.
"""
