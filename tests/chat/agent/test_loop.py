"""The agent loop on its own: scripted provider, no Django."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chat.agent.loop import run_agent_loop
from chat.agent.types import (
    AgentComplete,
    AgentTextDelta,
    AgentTool,
    AgentToolComplete,
    AgentToolProgress,
    AgentToolStart,
    LoopState,
    ToolContext,
    ToolProgress,
    ToolResult,
)
from chat.providers import scripted as s
from chat.providers.scripted import ScriptedProvider


async def collect(tools: dict[str, AgentTool] | None = None, max_iterations: int = 5, **kw: Any) -> tuple[list[Any], LoopState]:
    state = LoopState()
    events = [ev async for ev in run_agent_loop(
        provider=ScriptedProvider(), system="sys", messages=[{"role": "user", "content": "hi"}], tools=tools or {},
        model="m", max_tokens=100, max_iterations=max_iterations, ctx=ToolContext(), state=state, **kw,
    )]
    return events, state


def tool(name: str, fn: Any, **kw: Any) -> dict[str, AgentTool]:
    return {name: AgentTool(name=name, description="d", input_schema={"type": "object"}, executor=fn, **kw)}


async def test_text_only() -> None:
    ScriptedProvider.enqueue(s.text("Hel", "lo"))
    events, state = await collect()
    assert [e.text for e in events if isinstance(e, AgentTextDelta)] == ["Hel", "lo"]
    assert isinstance(events[-1], AgentComplete) and events[-1].text == "Hello"
    assert state.messages == [{"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}]


async def test_tool_round_trip_inserts_marker_and_pairs_result() -> None:
    ScriptedProvider.enqueue(s.tool_call("add", {"a": 1, "b": 2}, before="Adding. "), s.text("It is 3."))
    events, state = await collect(tool("add", lambda inp, ctx: str(inp["a"] + inp["b"])))
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("AgentToolStart") < kinds.index("AgentToolComplete")
    complete = next(e for e in events if isinstance(e, AgentToolComplete))
    assert complete.index == 0 and complete.result.text == "3"
    assert "[[tool:0]]" in state.text and state.text.startswith("Adding. ") and state.text.endswith("It is 3.")
    assert state.tool_history == [{"tool_name": "add", "input": {"a": 1, "b": 2}, "output": "3"}]
    # the second model call saw the tool_use and its paired tool_result
    second = ScriptedProvider.requests[1].messages
    assert second[-2]["content"][-1]["type"] == "tool_use"
    # (its output marked as data: a tool result is never an instruction)
    assert second[-1]["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": '<data source="tool:add">\n3\n</data>'}


async def test_generator_tool_streams_progress_and_returns_payload() -> None:
    def search(inp: dict[str, Any], ctx: ToolContext) -> Any:
        yield ToolProgress("searching", "looking", 0.5)
        yield ToolProgress("ranking", "sorting", 0.9)
        return ToolResult("found 2", payload={"type": "search_results", "data": [1, 2]})

    ScriptedProvider.enqueue(s.tool_call("search", {"q": "x"}), s.text("ok"))
    events, state = await collect(tool("search", search))
    progress = [e.update.stage for e in events if isinstance(e, AgentToolProgress)]
    assert progress == ["searching", "ranking"]
    assert state.payloads == [{"type": "search_results", "data": [1, 2]}]


async def test_async_generator_and_coroutine_tools() -> None:
    async def agen(inp: dict[str, Any], ctx: ToolContext) -> Any:
        yield ToolProgress("one")
        yield ToolResult("agen done")

    async def coro(inp: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(0)
        return "coro done"

    ScriptedProvider.enqueue(s.tool_call("agen", {}), s.tool_call("coro", {}, tool_id="toolu_2"), s.text("end"))
    events, state = await collect({**tool("agen", agen), **tool("coro", coro)})
    assert [h["output"] for h in state.tool_history] == ["agen done", "coro done"]
    assert "[[tool:0]]" in state.text and "[[tool:1]]" in state.text


async def test_unknown_tool_becomes_error_result() -> None:
    ScriptedProvider.enqueue(s.tool_call("nope", {}), s.text("sorry"))
    events, state = await collect()
    result = ScriptedProvider.requests[1].messages[-1]["content"][0]
    assert result["is_error"] is True and "unknown tool" in result["content"]
    assert isinstance(events[-1], AgentComplete)


async def test_tool_exception_becomes_error_result() -> None:
    def boom(inp: dict[str, Any], ctx: ToolContext) -> str:
        raise ValueError("kaput")

    ScriptedProvider.enqueue(s.tool_call("boom", {}), s.text("recovered"))
    events, state = await collect(tool("boom", boom))
    result = ScriptedProvider.requests[1].messages[-1]["content"][0]
    assert result["is_error"] and "kaput" in result["content"]
    assert state.text.endswith("recovered")


async def test_iteration_limit_stops_and_pairs_every_tool_use() -> None:
    calls = []
    for i in range(5):
        ScriptedProvider.enqueue(s.tool_call("t", {}, tool_id=f"toolu_{i}"))
    events, state = await collect(tool("t", lambda inp, ctx: calls.append(1) or "ok"), max_iterations=3)
    assert len(ScriptedProvider.requests) == 3
    assert ScriptedProvider.requests[-1].tool_choice == "none"
    assert len(calls) == 2  # the last iteration's tool call is answered with an error, not run
    assert isinstance(events[-1], AgentComplete) and events[-1].stop_reason == "max_iterations"
    uses = [b["id"] for m in state.messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in state.messages if m["role"] == "user" for b in m["content"]]
    assert uses == results


async def test_malformed_tool_json_is_an_error_result_not_a_crash() -> None:
    from chat.providers.base import MessageEnd, ToolUseEnd, ToolUseStart, Usage

    ScriptedProvider.enqueue([ToolUseStart("toolu_x", "t"), ToolUseEnd("toolu_x", "t", {}, input_error="Expecting value"), MessageEnd("tool_use", Usage())], s.text("ok"))
    ran = []
    events, state = await collect(tool("t", lambda inp, ctx: ran.append(1) or "x"))
    assert ran == []
    assert "not valid JSON" in ScriptedProvider.requests[1].messages[-1]["content"][0]["content"]


async def test_approval_refused_is_error_result_and_tool_not_run() -> None:
    ran = []
    ScriptedProvider.enqueue(s.tool_call("danger", {}), s.text("ok"))

    async def deny(*args: Any) -> bool:
        return False

    events, state = await collect(tool("danger", lambda i, c: ran.append(1) or "x", requires_approval=True), approver=deny)
    assert ran == [] and "did not approve" in state.tool_history[0]["output"]
    assert any(type(e).__name__ == "AgentToolApproval" for e in events)


async def test_cancel_leaves_state_readable() -> None:
    gate = asyncio.Event()
    ScriptedProvider.enqueue([s.TextDelta("partial "), gate])
    state = LoopState()

    async def run() -> None:
        async for _ in run_agent_loop(provider=ScriptedProvider(), system="", messages=[{"role": "user", "content": "x"}],
                                      tools={}, model="m", max_tokens=10, state=state):
            pass

    task = asyncio.create_task(run())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert state.text == "partial "


async def test_tool_start_event_carries_input() -> None:
    ScriptedProvider.enqueue(s.tool_call("t", {"q": "z"}), s.text("done"))
    events, _ = await collect(tool("t", lambda i, c: "r"))
    start = next(e for e in events if isinstance(e, AgentToolStart))
    assert start.input == {"q": "z"} and start.tool_use_id == "toolu_1"
