"""The LLM judge: one model call that grades a case's last answer against the case's criteria, with a score and a reason.

The judge is any provider (`CHAT_EVAL_JUDGE_PROVIDER`, or `--judge-provider`), asked for `CHAT_EVAL_JUDGE_MODEL`
(default: the configured CHAT_MODEL). Its reply must be one JSON object `{"score": 0..1, "reason": "..."}`; anything
else fails the case with what it said, never passes it.
"""
from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

from django.utils.module_loading import import_string

from chat.conf import PROVIDER_ALIASES, chat_settings
from chat.evals.results import JudgeResult, Tokens, TurnResult
from chat.evals.spec import JudgeSpec
from chat.providers.base import MessageEnd, Provider, ProviderError, ProviderRequest, TextDelta

JUDGE_TIMEOUT = 120.0  # seconds for the judge's one call
JUDGE_MAX_TOKENS = 400
ANSWER_CHARS = 6000  # of each answer shown to the judge
JUDGE_SYSTEM = (
    "You grade the answers of an assistant that sits on the pages of a web application. You get the criteria, the "
    "conversation (the user's messages, the assistant's answers and the tools it called) and grade the assistant's LAST "
    "answer against the criteria only. Reply with one JSON object and nothing else: "
    '{"score": <a number from 0 to 1: 1 the criteria are fully met, 0 not at all>, "reason": "<one or two sentences>"}'
)
_OBJECT = re.compile(r"\{.*\}", re.S)


def provider_class(name: str) -> type[Provider]:
    """The provider class a name means (`anthropic`, `openai`, `offline`, `scripted` or a dotted path); ImportError
    when there is none."""
    path = PROVIDER_ALIASES.get(name, name)
    cls = import_string(path)  # ImportError for a name that is not a dotted path or names nothing
    if not (isinstance(cls, type) and issubclass(cls, Provider)):
        raise ImportError(f"{path} is not a Provider subclass")
    return cls


@dataclass
class Judge:
    """A provider asked to grade, and the model it is asked for."""

    provider: Provider
    model: str

    @classmethod
    def named(cls, name: str, model: str | None = None) -> Judge:
        """The judge of a provider name (built from the engine's settings, in the running event loop)."""
        return cls(provider_class(name).from_settings(chat_settings), model or chat_settings.CHAT_EVAL_JUDGE_MODEL or chat_settings.CHAT_MODEL)

    async def grade(self, spec: JudgeSpec, turns: list[TurnResult]) -> JudgeResult:
        """The verdict on the last of `turns` (the conversation so far is shown for context)."""
        request = ProviderRequest(
            system=JUDGE_SYSTEM, tools=[], model=self.model, max_tokens=JUDGE_MAX_TOKENS, temperature=0.0, tool_choice="none",
            messages=[{"role": "user", "content": judge_prompt(spec, turns)}],
        )
        parts: list[str] = []
        tokens = Tokens()
        verdict = JudgeResult(passed=False, min_score=spec.min_score, provider=self.provider.name, model=self.model)
        try:
            async with asyncio.timeout(JUDGE_TIMEOUT):
                async for event in self.provider.stream(request):
                    if isinstance(event, TextDelta):
                        parts.append(event.text)
                    elif isinstance(event, MessageEnd):
                        u = event.usage
                        tokens = tokens.plus(Tokens(input=u.input_tokens, output=u.output_tokens, cache_read=u.cache_read_tokens,
                                                    cache_write=u.cache_write_tokens))
        except ProviderError as exc:
            return verdict.model_copy(update={"reason": f"the judge's model call failed ({exc.code}): {exc.message}", "tokens": tokens})
        except TimeoutError:
            return verdict.model_copy(update={"reason": f"the judge did not answer within {JUDGE_TIMEOUT:g} s", "tokens": tokens})
        score, reason = verdict_parse("".join(parts))
        passed = score is not None and score >= spec.min_score
        return verdict.model_copy(update={"score": score, "reason": reason, "passed": passed, "tokens": tokens})


def judge_prompt(spec: JudgeSpec, turns: list[TurnResult]) -> str:
    """What the judge reads: the criteria, then the conversation with the tools each answer called."""
    lines = [f"CRITERIA:\n{spec.criteria}", "", "CONVERSATION:"]
    for turn in turns:
        said = turn.message if turn.action is None else f"{turn.message} (clicked the button {turn.action!r})"
        lines.append(f"User: {said}")
        answer = turn.answer[:ANSWER_CHARS] + ("…" if len(turn.answer) > ANSWER_CHARS else "")
        if turn.tools:
            lines.append(f"(The assistant called: {', '.join(turn.tools)})")
        if turn.error:
            answer += f"\n(The turn ended with the error {turn.error!r}.)"
        lines.append(f"Assistant: {answer}")
    lines += ["", "Grade the assistant's LAST answer against the criteria."]
    return "\n".join(lines)


def verdict_parse(text: str) -> tuple[float | None, str]:
    """(score, reason) from the judge's reply; (None, why) when it is not the JSON object asked for."""
    found = _OBJECT.search(text)
    try:
        data = json.loads(found.group(0)) if found else None
    except json.JSONDecodeError:
        data = None
    said = " ".join(text.split())[:300] or "(nothing)"
    if not isinstance(data, dict):
        return None, f"the judge's reply is not the JSON object asked for: {said}"
    score, reason = data.get("score"), data.get("reason")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        return None, f"the judge's score is not a number from 0 to 1: {said}"
    return float(score), str(reason or "").strip() or "(no reason given)"
