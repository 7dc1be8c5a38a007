"""The agent loop: model call -> tool calls -> tool results -> repeat, bounded. Knows no Django."""
from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from chat.agent.data import as_data
from chat.agent.types import (
    AgentComplete,
    AgentEvent,
    AgentIteration,
    AgentTextDelta,
    AgentTool,
    AgentToolApproval,
    AgentToolComplete,
    AgentToolProgress,
    AgentToolStart,
    LoopState,
    TextChunks,
    ToolContext,
    ToolProgress,
    ToolResult,
)
from chat.providers.base import MessageEnd, Provider, ProviderRequest, StructuredPrompt, TextDelta, ToolUseEnd

Approver = Callable[[str, str, dict[str, Any]], Awaitable[bool]]
SyncRunner = Callable[..., Awaitable[Any]]  # runs a blocking call off the event loop: runner(fn, *args)
BeforeTool = Callable[[str, str, dict[str, Any], int], Awaitable[None]]
MAX_TOOL_OUTPUT_CHARS = 20_000


def tool_marker(index: int) -> str:
    """The text inserted where tool N's card renders."""
    return f"\n\n[[tool:{index}]]\n\n"


def _text_block_end(state: LoopState, blocks: list[dict[str, Any]], text_buf: list[str]) -> None:
    """The model's text so far becomes a block of its message and part of the turn's text."""
    text = "".join(text_buf)
    blocks.append({"type": "text", "text": text})
    state.text_parts.append(text)
    state.streaming = None


async def run_agent_loop(
    *,
    provider: Provider,
    system: str,
    messages: list[dict[str, Any]],
    tools: Mapping[str, AgentTool],
    model: str,
    max_tokens: int,
    temperature: float | None = None,
    max_iterations: int = 5,
    ctx: ToolContext | None = None,
    approver: Approver | None = None,
    state: LoopState | None = None,
    sync_runner: SyncRunner = asyncio.to_thread,
    before_tool: BeforeTool | None = None,
    prompt: StructuredPrompt | None = None,
) -> AsyncIterator[AgentEvent]:
    """Yield agent events until the model answers without tools or `max_iterations` model calls ran.

    `before_tool(tool_use_id, name, input, index)` records a call as started before it runs (side effects at
    most once: a call found started after a crash is reported interrupted, never run again); if it raises,
    the tool does not run. `prompt` is what `system` was written from, handed to the provider with it."""
    state = state if state is not None else LoopState()
    ctx = ctx or ToolContext()
    convo = list(messages)
    definitions = [t.definition() for t in tools.values()]
    tool_index = 0
    for iteration in range(1, max_iterations + 1):
        state.iterations = iteration
        last = iteration == max_iterations
        request = ProviderRequest(
            system=system, messages=list(convo), tools=definitions, model=model, max_tokens=max_tokens,
            temperature=temperature, tool_choice="none" if last and definitions else "auto", prompt=prompt,
        )
        blocks: list[dict[str, Any]] = []
        tool_uses: list[ToolUseEnd] = []
        text_buf = state.streaming = TextChunks()
        end: MessageEnd | None = None
        async for ev in provider.stream(request):
            if isinstance(ev, TextDelta):
                if ev.text:
                    text_buf.append(ev.text)
                    yield AgentTextDelta(ev.text)
            elif isinstance(ev, ToolUseEnd):
                if text_buf:
                    _text_block_end(state, blocks, text_buf)
                    text_buf = state.streaming = TextChunks()
                tool_uses.append(ev)
                blocks.append({"type": "tool_use", "id": ev.tool_use_id, "name": ev.name, "input": ev.input})
            elif isinstance(ev, MessageEnd):
                end = ev
        if text_buf:
            _text_block_end(state, blocks, text_buf)
        state.streaming = None
        end = end or MessageEnd(stop_reason="end_turn", usage=state.usage.__class__())
        state.usage.add(end.usage)
        yield AgentIteration(iteration=iteration, stop_reason=end.stop_reason, usage=end.usage, raw=end.raw)
        if blocks:
            assistant = {"role": "assistant", "content": blocks}
            convo.append(assistant)
            state.messages.append(assistant)
        if not tool_uses:
            yield AgentComplete(text=state.text, stop_reason=end.stop_reason)
            return
        state.pending_tool_uses = [{"id": t.tool_use_id, "name": t.name} for t in tool_uses]
        results: list[dict[str, Any]] = []
        for use in tool_uses:
            started = time.perf_counter()
            yield AgentToolStart(tool_use_id=use.tool_use_id, name=use.name, input=use.input)
            tool = tools.get(use.name)
            if tool is not None and tool.client_side and not last and not use.input_error:
                # the client runs it and answers in its next request, which continues this turn
                state.client_calls.append({"id": use.tool_use_id, "name": use.name, "input": use.input})
                state.pending_tool_uses = state.pending_tool_uses[1:]
                continue
            executed = False
            if last:
                result = ToolResult(f"Error: tool calls are over the limit of {max_iterations} iterations.", is_error=True)
            elif use.input_error:
                result = ToolResult(f"Error: the tool input was not valid JSON ({use.input_error}).", is_error=True)
            elif tool is None:
                result = ToolResult(f"Error: unknown tool '{use.name}'.", is_error=True)
            else:
                result = None
                if tool.requires_approval:
                    yield AgentToolApproval(tool_use_id=use.tool_use_id, name=use.name, input=use.input)
                    approved = await approver(use.tool_use_id, use.name, use.input) if approver else False
                    if not approved:
                        result = ToolResult("Error: the user did not approve this tool call.", is_error=True)
                if result is None and before_tool is not None:
                    try:
                        await before_tool(use.tool_use_id, use.name, use.input, tool_index)
                    except asyncio.CancelledError:
                        raise
                    except Exception:  # never run a call that is not recorded: a crash could run it twice
                        result = ToolResult("Error: the tool call could not be recorded, so it was not run.", is_error=True)
                if result is None:
                    executed = True
                    async for item in _execute(tool, use.input, replace(ctx, tool_use_id=use.tool_use_id), sync_runner):
                        if isinstance(item, ToolProgress):
                            yield AgentToolProgress(tool_use_id=use.tool_use_id, name=use.name, update=item)
                        else:
                            result = item
            assert result is not None
            text = result.text if len(result.text) <= MAX_TOOL_OUTPUT_CHARS else result.text[:MAX_TOOL_OUTPUT_CHARS] + "\n[truncated]"
            # what a tool returns is data (it may carry text someone else wrote), never instructions
            content = as_data(f"tool:{use.name}", text) if executed else text
            results.append({"type": "tool_result", "tool_use_id": use.tool_use_id, "content": content, **({"is_error": True} if result.is_error else {})})
            state.tool_history.append({"tool_name": use.name, "input": use.input, "output": text})
            if result.payload:
                state.payloads.append(result.payload)
            yield AgentToolComplete(
                index=tool_index, tool_use_id=use.tool_use_id, name=use.name, input=use.input, result=result,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
            marker = tool_marker(tool_index)
            state.text_parts.append(marker)
            yield AgentTextDelta(marker, is_tool_marker=True)
            tool_index += 1
            state.pending_tool_uses = state.pending_tool_uses[1:]
        tool_turn = {"role": "user", "content": results}
        if state.client_calls:  # stop here: the server tools' results are kept for the client's continuation
            if results:
                state.messages.append(tool_turn)
            yield AgentComplete(text=state.text, stop_reason="client_tool")
            return
        convo.append(tool_turn)
        state.messages.append(tool_turn)
        if last:
            yield AgentComplete(text=state.text, stop_reason="max_iterations")
            return


async def _execute(tool: AgentTool, tool_input: dict[str, Any], ctx: ToolContext, run_sync: SyncRunner) -> AsyncIterator[ToolProgress | ToolResult]:
    """Run any executor shape; exceptions become an error result the model can react to."""
    try:
        fn = tool.executor
        if inspect.isasyncgenfunction(fn):
            final: ToolResult | None = None
            async for item in fn(tool_input, ctx):
                if isinstance(item, ToolProgress):
                    yield item
                else:
                    final = _as_result(item)
            yield final or ToolResult("")
        elif inspect.iscoroutinefunction(fn):
            yield _as_result(await fn(tool_input, ctx))
        else:
            out = await run_sync(fn, tool_input, ctx)
            if inspect.isgenerator(out):
                while True:
                    done, value = await run_sync(_step, out)
                    if done:
                        yield _as_result(value)
                        break
                    if isinstance(value, ToolProgress):
                        yield value
                    else:  # a generator may also yield its result last
                        yield _as_result(value)
                        break
            else:
                yield _as_result(out)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the model sees the failure and can recover
        yield ToolResult(f"Error: {type(exc).__name__}: {exc}", is_error=True)


def _step(gen: Any) -> tuple[bool, Any]:
    try:
        return False, next(gen)
    except StopIteration as stop:
        return True, stop.value


def _as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult("")
    if isinstance(value, str):
        return ToolResult(value)
    return ToolResult(json.dumps(value, default=str))
