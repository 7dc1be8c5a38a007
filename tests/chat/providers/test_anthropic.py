"""AnthropicProvider: the real SDK parsing real Messages-API SSE bytes from a local fake server."""
from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from chat.agent.loop import run_agent_loop
from chat.agent.types import AgentComplete, AgentTool, AgentToolComplete, ToolContext
from chat.providers.anthropic import AnthropicProvider
from chat.providers.base import MessageEnd, ProviderError, TextDelta, ToolInputDelta, ToolUseEnd, ToolUseStart, Usage
from tests.chat.providers.common import MODEL, WEATHER_TOOL, cancel_after_first_text, collect, collect_until_error, make_request, texts
from tests.fakes.anthropic_server import FakeAnthropicServer, error_mid_stream, http_error, overloaded, rate_limited, stall, text_response, tool_use_response

API_KEY = "sk-ant-test-SECRET-123"
FAKE_SERVER = FakeAnthropicServer  # served by the `server` fixture (conftest.py)
ROOT = Path(__file__).resolve().parents[3]


def make_provider(server: FakeAnthropicServer, **overrides: Any) -> AnthropicProvider:
    """A provider with test-sized retry and stall timings."""
    options: dict[str, Any] = {"max_retries": 2, "retry_backoff": 0.01, "stall_timeout": 5.0, "timeout": 10.0, "prompt_caching": False}
    return AnthropicProvider(api_key=API_KEY, base_url=server.base_url, **{**options, **overrides})


# ---- streaming -----------------------------------------------------------------------------------


async def test_text_deltas_arrive_in_order_with_usage(server: FakeAnthropicServer) -> None:
    server.enqueue(text_response("Hel", "lo", " world", input_tokens=21))
    events = await collect(make_provider(server))

    assert events[:-1] == [TextDelta("Hel"), TextDelta("lo"), TextDelta(" world")]
    end = events[-1]
    assert isinstance(end, MessageEnd) and sum(isinstance(e, MessageEnd) for e in events) == 1
    assert end.stop_reason == "end_turn"
    assert end.usage == Usage(input_tokens=21, output_tokens=4)  # 1 at message_start, cumulative 4 at the end
    json.dumps(end.raw)  # must be JSON-serialisable for diagnostics
    assert end.raw["model"] == MODEL
    assert end.raw["content"] == [{"type": "text", "text": "Hello world"}]
    assert end.raw["usage"]["output_tokens"] == 4


async def test_tool_use_input_is_assembled_from_fragments(server: FakeAnthropicServer) -> None:
    tool_input = {"city": "Paris", "days": [1, 2], "units": "metric"}
    server.enqueue(tool_use_response("get_weather", tool_input, text="Checking.", tool_id="toolu_42"))
    events = await collect(make_provider(server), make_request(tools=[WEATHER_TOOL]))

    assert events[0] == TextDelta("Checking.")
    assert events[1] == ToolUseStart("toolu_42", "get_weather")
    fragments = [e for e in events if isinstance(e, ToolInputDelta)]
    assert len(fragments) > 3 and {f.tool_use_id for f in fragments} == {"toolu_42"}
    assert "".join(f.partial_json for f in fragments) == json.dumps(tool_input)
    assert events[-2] == ToolUseEnd("toolu_42", "get_weather", tool_input, input_error=None)
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.stop_reason == "tool_use"
    assert end.raw["content"][1] == {"type": "tool_use", "id": "toolu_42", "name": "get_weather", "input": tool_input}


async def test_malformed_tool_json_becomes_input_error(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_use_response("get_weather", raw_json='{"city": "Paris", oops}', tool_id="toolu_bad"))
    events = await collect(make_provider(server), make_request(tools=[WEATHER_TOOL]))

    end_tool = next(e for e in events if isinstance(e, ToolUseEnd))
    assert end_tool.tool_use_id == "toolu_bad" and end_tool.input == {}
    assert end_tool.input_error and "JSON" in end_tool.input_error
    assert isinstance(events[-1], MessageEnd) and events[-1].stop_reason == "tool_use"
    json.dumps(events[-1].raw)


async def test_request_shape(server: FakeAnthropicServer) -> None:
    server.enqueue(text_response("a"), text_response("b"))
    provider = make_provider(server)
    history = [{"role": "user", "content": "Weather?"}]
    await collect(provider, make_request(system="Be brief.", messages=history, tools=[WEATHER_TOOL],
                                         tool_choice="none", temperature=0.3, max_tokens=123))
    await collect(provider, make_request(system="Be brief.", messages=history))

    first, second = server.message_requests
    assert first.path == "/v1/messages"
    assert first.body == {
        "model": MODEL, "max_tokens": 123, "stream": True, "system": "Be brief.",
        "messages": history, "tools": [WEATHER_TOOL], "tool_choice": {"type": "none"}, "temperature": 0.3,
    }
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    assert first.headers["anthropic-version"]
    for absent in ("tools", "tool_choice", "temperature"):
        assert absent not in second.body
    assert second.body["system"] == "Be brief."


async def test_system_role_messages_are_moved_to_top_level_system(server: FakeAnthropicServer) -> None:
    server.enqueue(text_response("ok"))
    await collect(make_provider(server), make_request(
        system="Base.", messages=[{"role": "system", "content": "Page: /shop"}, {"role": "user", "content": "Hi"}],
        tools=[WEATHER_TOOL]))

    body = server.message_requests[0].body
    assert body["system"] == "Base.\n\nPage: /shop"
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["tool_choice"] == {"type": "auto"}


async def test_prompt_caching_marks_tools_system_and_history_breakpoints(server: FakeAnthropicServer) -> None:
    server.enqueue(text_response("ok"))
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Where?"}]},
        {"role": "user", "content": "Oslo"},
    ]
    request = make_request(system="Be brief.", messages=history, tools=[WEATHER_TOOL, {**WEATHER_TOOL, "name": "other"}])
    await collect(make_provider(server, prompt_caching=True), request)

    body = server.message_requests[0].body
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}]
    assert "cache_control" not in body["tools"][0] and body["tools"][1]["cache_control"] == ephemeral
    assert body["messages"][0] == {"role": "user", "content": "Weather?"}
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Where?", "cache_control": ephemeral}]  # the stable prefix
    assert body["messages"][2]["content"] == [{"type": "text", "text": "Oslo", "cache_control": ephemeral}]  # the last message
    assert request.messages == history and "cache_control" not in request.tools[1]  # the request itself is untouched
    breakpoints = json.dumps(body).count("cache_control")
    assert breakpoints <= 4  # the API's limit


async def test_cache_read_and_write_tokens_are_recorded(server: FakeAnthropicServer) -> None:
    scenario = text_response("cached")
    start = scenario["steps"][0][2]["message"]
    start["usage"] = {"input_tokens": 7, "output_tokens": 1, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 240}
    server.enqueue(scenario)
    events = await collect(make_provider(server, prompt_caching=True))

    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert end.usage == Usage(input_tokens=7, output_tokens=2, cache_read_tokens=1800, cache_write_tokens=240)
    assert end.usage.as_dict() == {"input_tokens": 7, "output_tokens": 2, "cache_read_tokens": 1800, "cache_write_tokens": 240}


# ---- retries and errors --------------------------------------------------------------------------


async def test_429_is_retried_honouring_retry_after_without_duplicating_text(server: FakeAnthropicServer) -> None:
    server.enqueue(rate_limited(retry_after="0.3"), text_response("only ", "once"))
    started = time.monotonic()
    events = await collect(make_provider(server))

    assert time.monotonic() - started >= 0.3
    assert texts(events) == ["only ", "once"]
    assert [r.headers["x-stainless-retry-count"] for r in server.message_requests] == ["0", "1"]


async def test_529_then_success(server: FakeAnthropicServer) -> None:
    server.enqueue(overloaded(), overloaded(), text_response("fine"))
    events = await collect(make_provider(server, max_retries=2))

    assert texts(events) == ["fine"] and isinstance(events[-1], MessageEnd)
    assert len(server.message_requests) == 3


async def test_529_forever_raises_overloaded_after_max_retries(server: FakeAnthropicServer) -> None:
    server.enqueue(*[overloaded()] * 10)
    events, err = await collect_until_error(make_provider(server, max_retries=2))

    assert events == []
    assert (err.code, err.retryable, err.status) == ("overloaded", True, 529)
    assert len(server.message_requests) == 3  # the first try and two retries
    assert API_KEY not in err.message and "authorization" not in err.message.lower()


async def test_error_event_after_text_raises_without_retry(server: FakeAnthropicServer) -> None:
    server.enqueue(error_mid_stream("Hel", "lo"), text_response("must not be requested"))
    events, err = await collect_until_error(make_provider(server))

    assert events == [TextDelta("Hel"), TextDelta("lo")]
    assert err.code == "overloaded" and err.retryable
    assert len(server.message_requests) == 1


async def test_error_event_before_any_output_is_retried(server: FakeAnthropicServer) -> None:
    server.enqueue(error_mid_stream(), text_response("second try"))
    events = await collect(make_provider(server))

    assert texts(events) == ["second try"]
    assert len(server.message_requests) == 2


async def test_stall_after_text_raises_timeout_within_stall_timeout(server: FakeAnthropicServer) -> None:
    server.enqueue(stall("partial"))
    started = time.monotonic()
    events, err = await collect_until_error(make_provider(server, stall_timeout=0.5))
    elapsed = time.monotonic() - started

    assert events == [TextDelta("partial")]
    assert err.code == "timeout" and err.retryable
    assert 0.5 <= elapsed < 2.0
    assert await asyncio.to_thread(server.message_requests[0].disconnected.wait, 2)  # the stream was closed
    assert len(server.message_requests) == 1


async def test_stall_before_any_output_is_retried(server: FakeAnthropicServer) -> None:
    server.enqueue(stall(), text_response("recovered"))
    events = await collect(make_provider(server, stall_timeout=0.3))

    assert texts(events) == ["recovered"]
    assert len(server.message_requests) == 2


@pytest.mark.parametrize(("status", "error_type", "code"), [
    (401, "authentication_error", "auth_error"),
    (403, "permission_error", "auth_error"),
    (400, "invalid_request_error", "bad_request"),
])
async def test_client_errors_are_not_retried(server: FakeAnthropicServer, status: int, error_type: str, code: str) -> None:
    server.enqueue(http_error(status, error_type, "nope"), text_response("must not be requested"))
    _, err = await collect_until_error(make_provider(server))

    assert (err.code, err.retryable, err.status) == (code, False, status)
    assert len(server.message_requests) == 1
    assert API_KEY not in err.message


async def test_unreachable_server_is_provider_unavailable() -> None:
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = AnthropicProvider(api_key=API_KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(ProviderError) as caught:
        await collect(provider)
    assert caught.value.code == "provider_unavailable" and caught.value.retryable


# ---- cancellation --------------------------------------------------------------------------------


async def test_cancellation_propagates_and_closes_the_stream(server: FakeAnthropicServer) -> None:
    server.enqueue(stall("first"))
    await cancel_after_first_text(make_provider(server, stall_timeout=30))
    assert await asyncio.to_thread(server.message_requests[0].disconnected.wait, 2)


async def test_stopping_iteration_early_closes_the_stream(server: FakeAnthropicServer) -> None:
    server.enqueue(stall("first"))
    stream = make_provider(server, stall_timeout=30).stream(make_request())
    assert await anext(stream) == TextDelta("first")
    await stream.aclose()  # type: ignore[attr-defined]
    assert await asyncio.to_thread(server.message_requests[0].disconnected.wait, 2)


# ---- integration with the agent loop -------------------------------------------------------------


async def test_agent_loop_tool_round_trip(server: FakeAnthropicServer) -> None:
    server.enqueue(
        tool_use_response("get_weather", {"city": "Oslo"}, text="Let me look.", tool_id="toolu_w"),
        text_response("It is ", "sunny in Oslo."),
    )
    calls: list[dict[str, Any]] = []

    async def weather(tool_input: dict[str, Any], ctx: ToolContext) -> str:
        calls.append(tool_input)
        return "sunny"

    tools = {"get_weather": AgentTool("get_weather", WEATHER_TOOL["description"], WEATHER_TOOL["input_schema"], weather)}
    events = [e async for e in run_agent_loop(
        provider=make_provider(server), system="Sys.", messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=tools, model=MODEL, max_tokens=200, temperature=0.0)]

    assert calls == [{"city": "Oslo"}]
    assert any(isinstance(e, AgentToolComplete) and e.result.text == "sunny" for e in events)
    complete = events[-1]
    assert isinstance(complete, AgentComplete) and complete.stop_reason == "end_turn"
    assert complete.text.startswith("Let me look.") and complete.text.endswith("It is sunny in Oslo.")
    first, second = server.message_requests
    assert first.body["temperature"] == 0.0
    assert second.body["messages"][1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Oslo"}},
    ]}
    assert second.body["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_w", "content": '<data source="tool:get_weather">\nsunny\n</data>'},
    ]}


# ---- the fake server itself ----------------------------------------------------------------------


def test_fake_server_speaks_messages_api_sse_to_sync_code(server: FakeAnthropicServer) -> None:
    server.enqueue(text_response("Hi"))
    body = json.dumps({"model": "m", "max_tokens": 5, "stream": True, "messages": []}).encode()
    request = urllib.request.Request(f"{server.base_url}/v1/messages", data=body,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = response.read().decode()

    frames = [f for f in raw.split("\n\n") if f]
    names = [f.split("\n")[0].removeprefix("event: ") for f in frames]
    assert names == ["message_start", "ping", "content_block_start", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]
    assert all(f.split("\n")[1].startswith("data: {") for f in frames)
    assert json.loads(frames[-2].split("\n")[1][6:])["usage"] == {"output_tokens": 2}


async def test_fake_server_runs_as_a_separate_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"scenarios": [text_response("from ", "process")], "default": text_response("again")}))
    command = [sys.executable, "-m", "tests.fakes.anthropic_server", "--port", "0", "--script", str(script)]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 10)
            port = int(line.split()[1])
            provider = AnthropicProvider(api_key=API_KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0, prompt_caching=False)
            assert texts(await collect(provider)) == ["from ", "process"]
            assert texts(await collect(provider)) == ["again"]  # the default once the queue is empty

            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_fake/requests", timeout=5) as response:
                recorded = json.loads(response.read())
            assert [r["body"]["system"] for r in recorded] == ["You are terse.", "You are terse."]
        finally:
            proc.terminate()  # SIGTERM is a clean shutdown (exit 0), and never leaves the server behind
        assert proc.wait(10) == 0
