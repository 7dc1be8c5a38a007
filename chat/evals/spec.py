"""The eval file format (docs/evals.md), parsed into typed models; a bad file is an `EvalSpecError` naming the file,
the case and the field, raised before any case runs.

A file is one set: YAML, or JSON (a file ending in .json; YAML reads JSON too). Everything the engine can check
without running a turn is checked here: the page is registered, a server action is one of the page's, an error is
a protocol error code, a regular expression compiles, a payload type is registered. Users are looked up in the
database by the runner (`chat.evals.runner.eval_users_load`), also before any case runs.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from chat.events import InteractionType
from chat.events.errors import ERROR_CODES
from pages.registry import registry as page_registry
from payloads.registry import registry as payload_registry

EVAL_FILE_SUFFIXES = (".yaml", ".yml", ".json")
LANGUAGE_TAG = r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$"  # as chat.send's `language`
DEFAULT_JUDGE_MIN_SCORE = 0.7


class EvalSpecError(Exception):
    """One or more files that are not valid eval sets; each problem names its file, case and field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _Spec(BaseModel):
    """A part of the file: unknown fields are refused (a misspelt `expects:` must not pass silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _as_list(value: Any) -> Any:
    """One string where a list is expected is a list of that string (`contains: "3"`)."""
    return [value] if isinstance(value, str) else value


StrList = list[Annotated[str, Field(min_length=1)]]  # pydantic copies a list default for each model


class EvalTurn(_Spec):
    """One message of the case, with the fields `chat.send` names (a plain string is a text message)."""

    message: str = Field(default="", max_length=100_000)
    interaction_type: InteractionType = "text_input"
    # the server action of this identifier that the previous turn offered: sent back with its data and signed token
    action: str | None = Field(default=None, min_length=1, max_length=100)
    context: dict[str, Any] = Field(default_factory=dict)  # merged over the case's context for this turn
    language: str | None = Field(default=None, pattern=LANGUAGE_TAG)
    approve: bool = False  # the answer to a tool that asks for approval in this turn (default: refused, nothing changes)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"message": data}
        if isinstance(data, dict) and data.get("action") is not None and "interaction_type" not in data:
            return {**data, "interaction_type": "action_executed"}  # naming an action is clicking it
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.action is not None and self.interaction_type != "action_executed":
            raise ValueError("`action` is a click on a server action: its interaction_type is action_executed")
        if self.interaction_type == "action_executed" and self.action is None:
            raise ValueError("an action_executed turn names its `action`: the identifier of a server action the previous turn offered")
        if self.action is None and not self.message.strip():
            raise ValueError("`message` is empty")
        return self


class Expectations(_Spec):
    """What the case's last turn must show; every one given must hold (`error` is always checked: absent, no error)."""

    contains: StrList = []  # case-insensitive substrings of the answer text
    not_contains: StrList = []
    matches: StrList = []  # regular expressions searched in the answer text
    tools: StrList = []  # tools called in the turn, in any order
    no_tools: bool = False
    suggested_values_min: int | None = Field(default=None, ge=0)
    actions: StrList = []  # server actions the answer offers
    payload_type: str | None = Field(default=None, min_length=1)
    error: str | None = None  # the error code the turn must end with; None: it must not end with an error
    max_seconds: float | None = Field(default=None, gt=0)

    _lists = field_validator("contains", "not_contains", "matches", "tools", "actions", mode="before")(_as_list)

    @field_validator("matches")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for i, pattern in enumerate(patterns):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"[{i}] {pattern!r} is not a regular expression: {exc}") from None
        return patterns

    @field_validator("error")
    @classmethod
    def _known_code(cls, code: str | None) -> str | None:
        if code is not None and code not in ERROR_CODES:
            raise ValueError(f"{code!r} is not an error code (docs/protocol.md: {', '.join(sorted(ERROR_CODES))})")
        return code

    @field_validator("payload_type")
    @classmethod
    def _registered_payload(cls, name: str | None) -> str | None:
        if name is not None and name not in payload_registry:
            raise ValueError(f"no payload type {name!r} is registered")
        return name

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.no_tools and self.tools:
            raise ValueError("`no_tools` and `tools` contradict each other")
        return self


class JudgeSpec(_Spec):
    """What an LLM judge grades the last answer against (a plain string is the criteria); passes at `min_score`."""

    criteria: str = Field(min_length=1, max_length=4000)
    min_score: float = Field(default=DEFAULT_JUDGE_MIN_SCORE, ge=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"criteria": data} if isinstance(data, str) else data


class EvalCase(_Spec):
    """One conversation: its turns in order, as `user` on `page`, and what its last turn must show."""

    name: str = Field(min_length=1, max_length=200)
    page: str = Field(min_length=1, max_length=100)
    context: dict[str, Any] = Field(default_factory=dict)  # merged into the page context (`current_page` is `page`)
    user: str = Field(min_length=1, max_length=150)
    turns: list[EvalTurn] = Field(min_length=1, max_length=50)
    expect: Expectations = Field(default_factory=Expectations)
    judge: JudgeSpec | None = None

    @field_validator("page")
    @classmethod
    def _registered_page(cls, name: str) -> str:
        if name not in page_registry:
            raise ValueError(f"no page {name!r} is registered (registered: {', '.join(sorted(page_registry.page_names()))})")
        return name

    @field_validator("context")
    @classmethod
    def _no_other_page(cls, context: dict[str, Any]) -> dict[str, Any]:
        if "current_page" in context:
            raise ValueError("`current_page` is the case's `page`: leave it out of the context")
        return context

    @model_validator(mode="after")
    def _actions_of_the_page(self) -> Self:
        page = page_registry.get(self.page)
        for i, turn in enumerate(self.turns):
            if turn.action is None:
                continue
            if i == 0:
                raise ValueError("turns[0]: the first turn cannot click an action: no earlier turn offered one")
            if page.server_action(turn.action) is None:
                offered = ", ".join(a.action for a in page.server_actions) or "none"
                raise ValueError(f"turns[{i}].action: the page {self.page!r} has no server action {turn.action!r} (it has: {offered})")
        return self

    def page_context(self, turn: EvalTurn) -> dict[str, Any]:
        """The context a turn is sent with: the case's, the turn's over it, and the page."""
        return {**self.context, **turn.context, "current_page": self.page}


class EvalSet(_Spec):
    """A file: a named set of cases (`source`: where it was read from, not part of the format)."""

    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    cases: list[EvalCase] = Field(min_length=1)
    source: str = Field(default="", exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _no_source(cls, data: Any) -> Any:
        if isinstance(data, dict) and "source" in data:
            raise ValueError("`source` is not a field of an eval set")
        return data

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        if duplicates := _duplicate_names({"cases": [{"name": case.name} for case in self.cases]}):
            raise ValueError(duplicates[0])
        return self

    def only(self, *names: str) -> EvalSet:
        """This set with only the named cases (KeyError naming one it does not have)."""
        missing = set(names) - {c.name for c in self.cases}
        if missing:
            raise KeyError(f"{self.source or self.name}: no case named {', '.join(sorted(map(repr, missing)))}")
        return self.model_copy(update={"cases": [c for c in self.cases if c.name in names]})


def eval_set_parse(data: Any, *, source: str = "<data>") -> EvalSet:
    """An eval set from already-read data (a file's, or one the admin built); EvalSpecError when it is not one."""
    try:
        parsed = EvalSet.model_validate(data)
    except ValidationError as exc:
        problems = _problems(exc, data)
        problems += [p for p in _duplicate_names(data) if p not in problems]  # said even when other fields are wrong
        raise EvalSpecError([f"{source}: {problem}" for problem in problems]) from None
    return parsed.model_copy(update={"source": source})


def eval_set_load(path: str | Path) -> EvalSet:
    """The eval set in one file (YAML, or JSON for .json); EvalSpecError naming the file when it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalSpecError([f"{path}: cannot be read: {exc}"]) from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise EvalSpecError([f"{path}: not valid JSON: {exc}"]) from None
    except yaml.YAMLError as exc:
        raise EvalSpecError([f"{path}: not valid YAML: {' '.join(str(exc).split())}"]) from None
    return eval_set_parse(data, source=str(path))


def eval_sets_load(paths: Iterable[str | Path]) -> list[EvalSet]:
    """Every set in these files and directories (their .yaml, .yml and .json files, recursively, in name order);
    one EvalSpecError with the problems of all of them."""
    sets: list[EvalSet] = []
    problems: list[str] = []
    for path in _eval_files(paths, problems):
        try:
            sets.append(eval_set_load(path))
        except EvalSpecError as exc:
            problems += exc.problems
    if problems:
        raise EvalSpecError(problems)
    return sets


def _eval_files(paths: Iterable[str | Path], problems: list[str]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in EVAL_FILE_SUFFIXES)
            if not found:
                problems.append(f"{path}: no eval files (.yaml, .yml, .json) in this directory")
            yield from found
        elif path.exists():
            yield path
        else:
            problems.append(f"{path}: no such file or directory")


def _duplicate_names(data: Any) -> list[str]:
    """A problem for each case named like an earlier one (names identify cases in reports and tests)."""
    cases = data.get("cases") if isinstance(data, dict) else None
    seen: set[str] = set()
    out = []
    for i, case in enumerate(cases if isinstance(cases, list) else []):
        name = case.get("name") if isinstance(case, dict) else None
        if isinstance(name, str) and name in seen:
            out.append(f"cases[{i}]: another case is already named {name!r} (names identify cases in reports)")
        if isinstance(name, str):
            seen.add(name)
    return out


def _problems(exc: ValidationError, data: Any) -> list[str]:
    """Each error as `case "<name>" (cases[i]), <field>: <message>`, or `<field>: <message>` outside a case."""
    out = []
    for error in exc.errors():
        loc = list(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        where = ""
        if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
            index = loc[1]
            where = f"case {_case_name(data, index)} (cases[{index}])"
            loc = loc[2:]
        field = _field_path(loc)
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        out.append(", ".join(part for part in (where, field) if part) + f": {message}" if where or field else message)
    return out


def _case_name(data: Any, index: int) -> str:
    try:
        name = data["cases"][index]["name"]
    except (KeyError, IndexError, TypeError):
        return "(no name)"
    return json.dumps(name, ensure_ascii=False) if isinstance(name, str) and name else "(no name)"


def _field_path(loc: list[Any]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path

