"""An eval report as JSON, as JUnit XML (one test case per run of a case) and as the table the command prints."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from chat.evals.results import CaseResult, CaseRun, EvalReport

BAR_WIDTH = 30
ANSWER_CHARS = 2000  # of an answer in a JUnit test case's output


def report_json(report: EvalReport) -> str:
    """The whole report: per case its runs, each with every expectation's result and why, the answer, the tools, the
    time, the tokens and the cost."""
    return report.model_dump_json(indent=2)


def _run_name(case: CaseResult, run: CaseRun, repeat: int) -> str:
    return case.name if repeat == 1 else f"{case.name} [{run.attempt}/{repeat}]"


def report_junit(report: EvalReport) -> str:
    """JUnit XML: a `testsuite` per set, a `testcase` per run of a case (failed: `failure` with why; skipped: `skipped`)."""
    root = ET.Element("testsuites", name="pagechat evals", tests=str(report.passed + report.failed + report.skipped),
                      failures=str(report.failed), errors="0", skipped=str(report.skipped), time=f"{report.seconds:.3f}")
    suites: dict[str, ET.Element] = {}
    for case in report.cases:
        suite = suites.get(case.set)
        if suite is None:
            suite = suites[case.set] = ET.SubElement(root, "testsuite", name=case.set)
        for run in case.runs:
            test = ET.SubElement(suite, "testcase", classname=case.set, name=_run_name(case, run, report.repeat), time=f"{run.seconds:.3f}")
            if run.status == "skipped":
                ET.SubElement(test, "skipped", message=run.skip_reason)
            elif run.status == "failed":
                failure = ET.SubElement(test, "failure", message=(run.failures or ["failed"])[0][:500], type="EvalFailure")
                failure.text = "\n".join(run.failures)
            if run.status != "skipped":
                out = ET.SubElement(test, "system-out")
                tools = f"\n\ntools: {', '.join(run.tools)}" if run.tools else ""
                out.text = run.answer[:ANSWER_CHARS] + tools
    for suite in suites.values():
        tests = suite.findall("testcase")
        suite.set("tests", str(len(tests)))
        suite.set("failures", str(sum(t.find("failure") is not None for t in tests)))
        suite.set("errors", "0")
        suite.set("skipped", str(sum(t.find("skipped") is not None for t in tests)))
        suite.set("time", f"{sum(float(t.get('time', '0')) for t in tests):.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def pass_rate_bar(rate: float | None, width: int = BAR_WIDTH, *, ascii_only: bool = False) -> str:
    """A bar of `width` cells filled in proportion to `rate` (empty for no rate)."""
    full, empty = ("#", ".") if ascii_only else ("█", "░")
    filled = round((rate or 0) * width)
    return full * filled + empty * (width - filled)


def _cost(cost: float | None) -> str:
    return "—" if cost is None else f"${cost:.4f}"


def report_table(report: EvalReport, *, ascii_only: bool = False) -> str:
    """One row per case (its runs passed, time, tokens, cost), why each failed run failed, then the pass rate with a bar."""
    name_width = min(60, max([len(f"{c.set} / {c.name}") for c in report.cases] + [4]))
    lines = [f"{'result':<6}  {'case':<{name_width}}  {'passed':>7}  {'time':>8}  {'tokens':>8}  {'cost':>9}"]
    failures: list[str] = []
    for case in report.cases:
        passed, failed, _ = case.counts
        scored = [r for r in case.runs if r.status != "skipped"]
        seconds = sum(r.seconds for r in scored)
        tokens = sum(r.tokens.total for r in scored)
        costs = [r.cost_usd for r in scored]
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        label = f"{case.set} / {case.name}"
        label = label if len(label) <= name_width else label[: name_width - 1] + "…"
        lines.append(f"{case.status.upper()[:4]:<6}  {label:<{name_width}}  {f'{passed}/{passed + failed}' if scored else '-':>7}  "
                     f"{f'{seconds:.2f}s' if scored else '-':>8}  {tokens if scored else '-':>8}  {_cost(cost) if scored else '-':>9}")
        for run in case.runs:
            if run.status == "failed":
                failures.append(f"{_run_name(case, run, report.repeat)} ({case.set}):")
                failures += [f"    {line}" for line in run.failures]
                failures.append(f"    answer: {' '.join(run.answer.split())[:300] or '(none)'}")
            elif run.status == "skipped" and run.attempt == 1:
                failures.append(f"{case.name} ({case.set}): skipped: {run.skip_reason}")
    rate = report.pass_rate
    summary = (f"Pass rate  {pass_rate_bar(rate, ascii_only=ascii_only)}  " + (f"{rate:.1%}" if rate is not None else "no run scored")
               + f"  ({report.passed} of {report.passed + report.failed} runs passed" + (f", {report.skipped} skipped" if report.skipped else "")
               + f"; needs {report.min_pass_rate:.0%})  {'OK' if report.ok else 'FAILED'}")
    totals = (f"{report.provider} ({report.model}), {report.seconds:.1f} s, {report.tokens.total} tokens, {_cost(report.cost_usd)}"
              + (f"; judge: {report.judge_provider} ({report.judge_model})" if report.judge_provider else "; no judge"))
    return "\n".join([*lines, *(["", *failures] if failures else []), "", totals, summary]) + "\n"
