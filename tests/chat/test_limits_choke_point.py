"""Every path that starts a model call passes the same limits: the daily budget, the message rate and the runs in
progress. Each path (transport x kind of turn) is tried by a user at each limit: the refusal is the limit's code
(with `retry_after` / `Retry-After` when the limit frees by itself) and no model call is made, no run stored."""
from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chat.models import Run
from chat.providers import scripted as s
from chat.quotas.budgets import budgets
from tests.chat.test_http import TokenClient, auth_headers
from tests.conftest import ws_connect
from tests.protocol import check_http

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
FRONTEND_TOOL = {"name": "set_theme", "description": "Change the page's colour theme.",
                 "parameters": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}}


@dataclass
class History:
    """What the user did before reaching a limit: the conversations each path continues."""

    client: TokenClient
    conversation_id: int = 0  # a websocket conversation with a complete answer
    agui_messages: list[dict[str, Any]] = field(default_factory=list)  # the AG-UI thread "fe": its last answer waits for a frontend tool


@dataclass
class Answer:
    """How an attempt was answered: an error's code and retry hint, or "started" when a run began."""

    code: str
    retry_after: int | None = None


async def _ws(user: Any, frame: dict[str, Any]) -> Answer:
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.send({"type": "chat.send", "context": {}, **frame})
    first = await ws.recv()
    if first["type"] == "error" and "seq" not in first:
        await ws.close()
        return Answer(first["code"], first.get("retry_after"))
    await ws.until_terminal()  # a run started: let it end (its model call is what the test counts)
    await ws.close()
    return Answer("started")


async def _http(client: TokenClient, url: str, body: dict[str, Any]) -> Answer:
    r = await client.post(url, body, content_type="application/json")
    if r.status_code == 200:
        if getattr(r, "streaming", False):
            b"".join([chunk async for chunk in r.streaming_content])  # the run's whole stream
        return Answer("started")
    error = check_http(r.status_code, r.content)
    assert r.get("Retry-After") == (str(error["retry_after"]) if "retry_after" in error else None), "Retry-After is the body's retry_after"
    return Answer(error["code"], error.get("retry_after"))


def _agui(thread: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"r-{len(messages)}", "messages": messages, "tools": [], "context": [], "forwardedProps": {}, **extra}


def _sdk(*texts: str, **extra: Any) -> dict[str, Any]:
    messages = [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": t}]} for i, t in enumerate(texts)]
    return {"id": "sdk", "messages": messages, "trigger": "submit-message", **extra}


Attempt = Callable[[Any, History], Awaitable[Answer]]
PATHS: dict[str, Attempt] = {
    "ws new message": lambda u, h: _ws(u, {"message": "one more", "conversation_id": None}),
    "ws continue": lambda u, h: _ws(u, {"message": "Continue", "conversation_id": h.conversation_id, "interaction_type": "value_selected"}),
    "ws server action": lambda u, h: _ws(u, {"message": "Accept", "conversation_id": h.conversation_id, "interaction_type": "action_executed",
                                             "action_metadata": {"action_identifier": "no_such_action"}}),
    "ws regenerate (replace_last answer)": lambda u, h: _ws(u, {"message": "", "conversation_id": h.conversation_id, "replace_last": "answer"}),
    "ws edit (replace_last question)": lambda u, h: _ws(u, {"message": "edited", "conversation_id": h.conversation_id, "replace_last": "question"}),
    "REST new message": lambda u, h: _http(h.client, "/api/chat", {"message": "one more"}),
    "REST regenerate": lambda u, h: _http(h.client, "/api/chat", {"message": "", "conversation_id": h.conversation_id, "replace_last": "answer"}),
    "REST edit": lambda u, h: _http(h.client, "/api/chat", {"message": "edited", "conversation_id": h.conversation_id, "replace_last": "question"}),
    "SSE new message": lambda u, h: _http(h.client, "/api/chat/stream", {"message": "one more"}),
    "SSE regenerate": lambda u, h: _http(h.client, "/api/chat/stream", {"message": "", "conversation_id": h.conversation_id, "replace_last": "answer"}),
    "SSE edit": lambda u, h: _http(h.client, "/api/chat/stream", {"message": "edited", "conversation_id": h.conversation_id, "replace_last": "question"}),
    "AG-UI new message": lambda u, h: _http(h.client, "/api/chat/ag-ui", _agui("fe", [*h.agui_messages[:1], {"id": "u9", "role": "user", "content": "more"}])),
    "AG-UI frontend tool results": lambda u, h: _http(h.client, "/api/chat/ag-ui", _agui("fe", h.agui_messages, tools=[FRONTEND_TOOL])),
    "AI SDK submit-message": lambda u, h: _http(h.client, "/api/chat/ai-sdk", _sdk("first", "one more")),
    "AI SDK regenerate-message": lambda u, h: _http(h.client, "/api/chat/ai-sdk", _sdk("first", trigger="regenerate-message")),
}


async def _history(user: Any, scripted: Any) -> History:
    """A websocket conversation, an AI SDK chat and an AG-UI thread whose answer called a frontend tool, all complete."""
    scripted.enqueue(s.text("answer"), s.text("sdk answer"), s.tool_call("set_theme", {"color": "blue"}, tool_id="toolu_fe", before="Switching."))
    history = History(client=TokenClient(await auth_headers(user)))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("first")
    complete = (await ws.until_terminal())[-1]
    await ws.close()
    history.conversation_id = complete["payload"]["conversation_id"]
    assert (await _http(history.client, "/api/chat/ai-sdk", _sdk("first"))).code == "started"
    asked = [{"id": "u1", "role": "user", "content": "make it blue"}]
    assert (await _http(history.client, "/api/chat/ag-ui", _agui("fe", asked, tools=[FRONTEND_TOOL]))).code == "started"
    call = {"id": "toolu_fe", "type": "function", "function": {"name": "set_theme", "arguments": json.dumps({"color": "blue"})}}
    history.agui_messages = [*asked, {"id": "a1", "role": "assistant", "content": "Switching.", "toolCalls": [call]},
                             {"id": "tr1", "role": "tool", "toolCallId": "toolu_fe", "content": "theme is now blue"}]
    assert await Run.objects.filter(status="completed").acount() == 3
    return history


async def _refused_without_a_model_call(attempt: Attempt, user: Any, history: History, scripted: Any) -> Answer:
    calls, runs = len(scripted.requests), await Run.objects.acount()
    answer = await attempt(user, history)
    assert (len(scripted.requests), await Run.objects.acount()) == (calls, runs), f"{answer}: a model call was made, a run stored"
    return answer


@pytest.mark.parametrize("path", list(PATHS))
async def test_every_path_that_calls_the_model_is_refused_at_each_limit_without_a_model_call(
        path: str, user: Any, scripted: Any, settings: Any) -> None:
    attempt = PATHS[path]
    settings.CHAT_DAILY_TOKEN_BUDGET = 10**9  # a budget from the start: with Redis, spending is recorded only then
    history = await _history(user, scripted)

    # the daily token budget, used up: budget_exceeded until midnight UTC
    settings.CHAT_DAILY_TOKEN_BUDGET = (await budgets.spent_today(user.pk)).tokens
    answer = await _refused_without_a_model_call(attempt, user, history, scripted)
    assert answer.code == "budget_exceeded" and answer.retry_after is not None and 1 <= answer.retry_after <= 86400, answer
    settings.CHAT_DAILY_TOKEN_BUDGET = 0

    # the message rate: the last 60 s already hold the limit (the history's three messages)
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 3
    answer = await _refused_without_a_model_call(attempt, user, history, scripted)
    assert answer.code == "rate_limited" and answer.retry_after is not None and 1 <= answer.retry_after <= 60, answer
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1000

    # the runs in progress: one run of another conversation is running (its end is not known: no retry_after)
    settings.CHAT_MAX_RUNNING_PER_USER = 1
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("busy "), gate])
    blocker, _ = await ws_connect(user)
    assert blocker is not None
    await blocker.chat("a long one")
    while (await blocker.recv())["type"] != "text_delta":  # running, its model call under way
        pass
    try:
        answer = await _refused_without_a_model_call(attempt, user, history, scripted)
        assert answer == Answer("rate_limited"), answer
    finally:
        gate.set()
        assert (await blocker.until_terminal())[-1]["type"] == "complete"
        await blocker.close()

    # and with room again, the same attempt starts its run (the refusals above were the limits, not the request)
    scripted.enqueue(s.text("now"))
    runs = await Run.objects.acount()
    assert (await attempt(user, history)).code == "started"
    assert await Run.objects.acount() == runs + 1


# ---- one choke point -------------------------------------------------------------------------------


OPERATOR_TOOLING = ("chat/evals/",)


def _product_trees() -> list[tuple[str, ast.Module]]:
    return [(str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8")))
            for package in ("chat", "tools", "payloads", "pages") for path in (ROOT / package).rglob("*.py")]


def _importers(prefixes: tuple[str, ...]) -> list[str]:
    """The product's modules that import a module under one of these directories."""
    dotted = tuple(p.rstrip("/").replace("/", ".") for p in prefixes)
    found = set()
    for path, tree in _product_trees():
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == d or n.startswith(d + ".") for n in names for d in dotted):
                found.add(path)
    return sorted(found)


def _calls(name: str) -> list[str]:
    """`file:function` of every call of `name` (a function, or a method `.name`) in the product's code."""
    found = set()
    for path, tree in _product_trees():
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Call):
                    callee = node.func
                    called = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else None
                    if called == name:
                        found.add(f"{path}:{func.name}")
    return sorted(found)


def test_runs_start_only_behind_the_admissions_limits() -> None:
    """A run's task (the model calls) is started in one place, Admission.start, which refuses a turn whose limits
    were not checked (below); turn_start and turn_regenerate, the services every transport calls, pass the choke point."""
    assert _calls("turn_execute") == ["chat/turns/gate.py:start"]
    assert _calls("admitted") == ["chat/turns/admission.py:turn_regenerate", "chat/turns/admission.py:turn_start"]
    assert all(c.startswith(("chat/turns/admission.py:", "chat/turns/gate.py:")) for c in _calls("Admission")), _calls("Admission")
    # the model is streamed only by a started turn (chat.turns.work.Turn, which turn_execute runs): its agent loop,
    # and the title of a conversation's first turn, after its answer. Operators' tooling (manage.py chat_eval's judge)
    # calls a model for no user and is reached by no request.
    streams = [c for c in _calls("stream") if not c.startswith(OPERATOR_TOOLING)]
    assert streams == ["chat/agent/loop.py:run_agent_loop", "chat/turns/titles.py:title_from_model"]
    assert _calls("run_agent_loop") == ["chat/turns/work.py:_model_turn"]
    assert _calls("title_from_model") == ["chat/turns/titles.py:turn_title_set"]
    assert _calls("turn_title_set") == ["chat/turns/work.py:finish"]
    # the admin's eval runs start `manage.py chat_eval` in a process of its own (chat.evals.stored.eval_run_start): no model
    # call happens in the web process that serves staff
    assert not [m for m in _importers(OPERATOR_TOOLING) if not m.startswith((*OPERATOR_TOOLING, "chat/management/", "chat/admin/evals.py"))]


async def test_a_run_started_without_its_limits_is_refused(user: Any) -> None:
    """Admission.start refuses a turn whose limits were not all checked (a bug, never a free model call)."""
    from chat.turns.gate import Admission

    admission = Admission(user)
    with pytest.raises(RuntimeError, match="without its admission's limits"):
        admission.start(None, None, None, None)  # type: ignore[arg-type]
    await admission.limits()
    with pytest.raises(RuntimeError):  # the runs in progress not counted yet
        admission.start(None, None, None, None)  # type: ignore[arg-type]
