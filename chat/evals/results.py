"""What an eval run found, as typed models: the JSON report is their dump (`EvalReport.model_dump_json`)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

Status = Literal["passed", "failed", "skipped"]


class Tokens(BaseModel):
    """Tokens of one turn or summed over several (cache reads and writes apart, as runs record them)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def plus(self, other: Tokens) -> Tokens:
        return Tokens(input=self.input + other.input, output=self.output + other.output,
                      cache_read=self.cache_read + other.cache_read, cache_write=self.cache_write + other.cache_write)


def cost_sum(costs: list[float | None]) -> float | None:
    """The total of several costs; None (unknown, never free) when one of them is unknown."""
    return None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 8)


class TurnResult(BaseModel):
    """One turn as it ran: what was sent, how it ended and what the answer held."""

    message: str
    interaction_type: str = "text_input"
    action: str | None = None
    conversation_id: int | None = None
    run_id: str | None = None
    answer: str = ""  # the answer's text as a reader sees it (without the [[tool:N]] card markers)
    tools: list[str] = Field(default_factory=list)  # tools called, in order
    suggested_values: list[dict[str, Any]] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)  # server actions the answer offers
    payload_type: str | None = None
    action_result: dict[str, Any] | None = None  # how the clicked server action ended (complete.action_result)
    error: str | None = None  # the error code it ended with (a refusal before the run, or the run's `error`)
    error_message: str = ""
    seconds: float = 0.0  # from the send to the terminal event
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None  # None: the model has no price (CHAT_PRICES)
    payload: dict[str, Any] | None = Field(default=None, exclude=True)  # the `complete` payload: the next turn's buttons


class ExpectationResult(BaseModel):
    """One expectation on the last turn: held or not, and why."""

    name: str
    passed: bool
    expected: Any = None
    actual: Any = None
    why: str = ""


class JudgeResult(BaseModel):
    """The LLM judge's verdict on the last answer: a score from 0 to 1 and its reason."""

    passed: bool
    score: float | None = None  # None: the judge failed or its reply was not the JSON asked for
    min_score: float
    reason: str = ""
    provider: str = ""
    model: str = ""
    tokens: Tokens = Field(default_factory=Tokens)


class CaseRun(BaseModel):
    """One run of a case (a case runs `repeat` times, each in a conversation of its own)."""

    attempt: int = 1
    status: Status
    skip_reason: str = ""
    conversation_id: int | None = None
    answer: str = ""  # the last turn's
    tools: list[str] = Field(default_factory=list)  # the last turn's
    error: str | None = None  # the last turn's
    expectations: list[ExpectationResult] = Field(default_factory=list)
    judge: JudgeResult | None = None
    turns: list[TurnResult] = Field(default_factory=list)
    seconds: float = 0.0  # every turn's, summed (the judge's call is not counted)
    tokens: Tokens = Field(default_factory=Tokens)  # every turn's
    cost_usd: float | None = None

    @property
    def failures(self) -> list[str]:
        """Why this run failed, one line per expectation (and the judge) that did not hold."""
        lines = [f"{e.name}: {e.why}" for e in self.expectations if not e.passed]
        if self.judge is not None and not self.judge.passed:
            score = "no score" if self.judge.score is None else f"score {self.judge.score:g} < {self.judge.min_score:g}"
            lines.append(f"judge ({score}): {self.judge.reason}")
        return lines


class CaseResult(BaseModel):
    """A case over its runs: passed when every run that was not skipped passed."""

    set: str
    name: str
    status: Status
    passed: bool
    runs: list[CaseRun]

    @property
    def counts(self) -> tuple[int, int, int]:
        """(passed, failed, skipped) runs."""
        return (sum(r.status == "passed" for r in self.runs), sum(r.status == "failed" for r in self.runs),
                sum(r.status == "skipped" for r in self.runs))


class EvalReport(BaseModel):
    """A whole eval run: every case's runs, the pass rate over the runs that were not skipped, and whether it reached
    `min_pass_rate` (`ok`)."""

    sets: list[str]
    sources: list[str]
    provider: str
    model: str
    judge_provider: str | None = None
    judge_model: str | None = None
    repeat: int = 1
    min_pass_rate: float = 1.0
    started_at: datetime
    seconds: float = 0.0
    passed: int = 0  # runs
    failed: int = 0
    skipped: int = 0
    pass_rate: float | None = None  # passed / (passed + failed); None when no run was scored
    ok: bool = False
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None
    cases: list[CaseResult] = Field(default_factory=list)

    def finish(self) -> EvalReport:
        """Fill in the totals from the cases."""
        runs = [r for c in self.cases for r in c.runs]
        self.passed = sum(r.status == "passed" for r in runs)
        self.failed = sum(r.status == "failed" for r in runs)
        self.skipped = sum(r.status == "skipped" for r in runs)
        scored = self.passed + self.failed
        self.pass_rate = self.passed / scored if scored else None
        self.ok = self.pass_rate is not None and self.pass_rate >= self.min_pass_rate
        tokens = Tokens()
        for r in runs:
            tokens = tokens.plus(r.tokens)
        self.tokens = tokens
        self.cost_usd = cost_sum([r.cost_usd for r in runs if r.status != "skipped"])
        return self
