"""The OpenAI-compatible provider through the real `openai` SDK against a local server replaying streamed bytes."""
from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from typing import Any

import pytest

from chat.agent.data import as_data
from chat.agent.loop import run_agent_loop
from chat.agent.types import AgentComplete, AgentTool, AgentToolComplete, ToolContext
from chat.checks import check_chat_settings
from chat.conf import chat_settings
from chat.providers.base import MessageEnd, ProviderError, TextDelta, ToolInputDelta, ToolUseEnd, ToolUseStart, Usage
from chat.providers.openai import OpenAIProvider
from tests.chat.providers.common import MODEL, WEATHER_TOOL, cancel_after_first_text, collect, collect_until_error, make_request, texts
from tests.fakes.openai_server import FakeOpenAIServer, http_error, recorded

API_KEY = "sk-test-openai-SECRET-0123456789"
FAKE_SERVER = FakeOpenAIServer  # served by the `server` fixture (conftest.py)


def make_provider(server: FakeOpenAIServer, **overrides: Any) -> OpenAIProvider:
    options: dict[str, Any] = {"max_retries": 2, "retry_backoff": 0.01, "stall_timeout": 10.0}
    return OpenAIProvider(api_key=API_KEY, base_url=server.base_url, **{**options, **overrides})


# ---- streaming -----------------------------------------------------------------------------------


async def test_text_chunks_arrive_in_order_with_usage_and_cache_reads(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("text.sse"))
    events = await collect(make_provider(server))

    assert events[:-1] == [TextDelta("Hel"), TextDelta("lo"), TextDelta(" world"), TextDelta(".")]
    end = events[-1]
    assert isinstance(end, MessageEnd) and sum(isinstance(e, MessageEnd) for e in events) == 1
    assert end.stop_reason == "end_turn"
    # prompt_tokens 1234 of which 1024 cached: counted apart, as Anthropic reports them
    assert end.usage == Usage(input_tokens=210, output_tokens=5, cache_read_tokens=1024)
    json.dumps(end.raw)
    assert end.raw["choices"][0]["message"] == {"role": "assistant", "content": "Hello world."}
    assert end.raw["choices"][0]["finish_reason"] == "stop"
    assert end.raw["usage"]["prompt_tokens"] == 1234


async def test_one_tool_call_is_assembled_from_fragments(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("tool_call.sse"))
    events = await collect(make_provider(server), make_request(tools=[WEATHER_TOOL]))

    tool_input = {"city": "Paris", "days": [1, 2], "units": "metric"}
    assert events[0] == TextDelta("Checking.")
    assert events[1] == ToolUseStart("call_Qm3kW8pZr1", "get_weather")
    fragments = [e for e in events if isinstance(e, ToolInputDelta)]
    assert len(fragments) > 3 and {f.tool_use_id for f in fragments} == {"call_Qm3kW8pZr1"}
    assert "".join(f.partial_json for f in fragments) == json.dumps(tool_input)
    assert events[-2] == ToolUseEnd("call_Qm3kW8pZr1", "get_weather", tool_input, input_error=None)
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.stop_reason == "tool_use" and end.usage == Usage(88, 31)
    assert end.raw["choices"][0]["message"]["tool_calls"] == [
        {"id": "call_Qm3kW8pZr1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(tool_input)}}]


async def test_parallel_tool_calls_each_start_stream_and_end_in_order(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("parallel_tool_calls.sse"))
    events = await collect(make_provider(server), make_request(tools=[WEATHER_TOOL]))

    starts = [e for e in events if isinstance(e, ToolUseStart)]
    ends = [e for e in events if isinstance(e, ToolUseEnd)]
    assert starts == [ToolUseStart("call_A1b2C3", "get_weather"), ToolUseStart("call_D4e5F6", "get_weather")]
    assert ends == [ToolUseEnd("call_A1b2C3", "get_weather", {"city": "Oslo"}), ToolUseEnd("call_D4e5F6", "get_weather", {"city": "Lima"})]
    for call_id, city in (("call_A1b2C3", "Oslo"), ("call_D4e5F6", "Lima")):
        assert "".join(e.partial_json for e in events if isinstance(e, ToolInputDelta) and e.tool_use_id == call_id) == json.dumps({"city": city})
    assert isinstance(events[-1], MessageEnd) and events[-1].stop_reason == "tool_use"
    assert texts(events) == []


async def test_ollama_style_single_chunk_call_with_stop_reason_stop(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("ollama_tool_call.sse"))
    events = await collect(make_provider(server), make_request(tools=[WEATHER_TOOL]))

    assert [e for e in events if isinstance(e, ToolUseEnd)] == [ToolUseEnd("call_x9", "get_weather", {"city": "Rome"})]
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.stop_reason == "tool_use"  # "stop" with calls still means tool use
    assert end.usage == Usage(140, 18)


async def test_malformed_tool_arguments_become_input_error(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("malformed_tool_call.sse"))
    events = await collect(make_provider(server), make_request(tools=[WEATHER_TOOL]))

    end_tool = next(e for e in events if isinstance(e, ToolUseEnd))
    assert end_tool.tool_use_id == "call_bad" and end_tool.input == {}
    assert end_tool.input_error and "JSON" in end_tool.input_error


async def test_request_shape_translates_history_tools_and_options(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("text.sse"), recorded("text.sse"))
    provider = make_provider(server)
    history = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}]},
        {"role": "user", "content": [{"type": "text", "text": "And this?"},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
    ]
    await collect(provider, make_request(system="Be brief.", messages=history, tools=[WEATHER_TOOL], tool_choice="none",
                                         temperature=0.3, max_tokens=123))
    await collect(provider, make_request(system="Be brief.", messages=[{"role": "user", "content": "Hi"}]))

    first, second = server.completion_requests
    assert first.path == "/v1/chat/completions"
    assert first.body == {
        "model": MODEL, "max_tokens": 123, "stream": True, "stream_options": {"include_usage": True}, "temperature": 0.3,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "user", "content": [{"type": "text", "text": "And this?"},
                                         {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                                    "parameters": WEATHER_TOOL["input_schema"]}}],
        "tool_choice": "none",
    }
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    for absent in ("tools", "tool_choice", "temperature"):
        assert absent not in second.body


async def test_a_pdf_is_described_not_sent_unless_the_server_takes_documents(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("text.sse"), recorded("text.sse"))
    doc = {"role": "user", "content": [{"type": "text", "text": "Summarise"}, {"type": "document", "title": "report.pdf",
           "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}]}
    await collect(make_provider(server), make_request(messages=[doc]))
    await collect(make_provider(server, send_documents=True), make_request(messages=[doc]))

    plain, with_file = (r.body["messages"][1]["content"] for r in server.completion_requests)
    assert plain == "Summarise\n\n[report.pdf: attached, but this model server cannot read documents]"
    assert with_file[1] == {"type": "file", "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}}


# ---- retries and errors --------------------------------------------------------------------------


async def test_429_is_retried_honouring_retry_after_without_duplicating_text(server: FakeOpenAIServer) -> None:
    server.enqueue(http_error(429, "Rate limit reached", "requests", "rate_limit_exceeded", {"retry-after": "0.3"}), recorded("text.sse"))
    started = time.monotonic()
    events = await collect(make_provider(server))

    assert time.monotonic() - started >= 0.3
    assert texts(events) == ["Hel", "lo", " world", "."]
    assert [r.headers["x-stainless-retry-count"] for r in server.completion_requests] == ["0", "1"]


async def test_503_forever_raises_overloaded_after_max_retries(server: FakeOpenAIServer) -> None:
    server.enqueue(*[http_error(503, "Service Unavailable", "server_error", None, {"retry-after": "0.01"})] * 10)
    events, err = await collect_until_error(make_provider(server, max_retries=2))

    assert events == []
    assert (err.code, err.retryable, err.status) == ("provider_unavailable", True, 503)
    assert len(server.completion_requests) == 3
    assert API_KEY not in err.message and "authorization" not in err.message.lower()


async def test_error_mid_stream_after_text_raises_without_retry(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("error_mid_stream.sse"), recorded("text.sse"))
    events, err = await collect_until_error(make_provider(server))

    assert events == [TextDelta("Hel"), TextDelta("lo")]
    assert err.code == "provider_unavailable" and err.retryable and err.status == 200
    assert "server had an error" in err.message
    assert len(server.completion_requests) == 1


async def test_error_before_any_output_is_retried(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("error_first.sse"), recorded("text.sse"))
    events = await collect(make_provider(server))

    assert texts(events) == ["Hel", "lo", " world", "."]
    assert len(server.completion_requests) == 2


async def test_a_stream_cut_before_its_finish_reason_is_an_error_not_an_answer(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("truncated.sse"))
    events, err = await collect_until_error(make_provider(server))

    assert texts(events) == ["cut"]
    assert err.code == "provider_unavailable"


async def test_stall_after_text_raises_timeout_within_stall_timeout(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("text.sse", cut_after=3))
    started = time.monotonic()
    events, err = await collect_until_error(make_provider(server, stall_timeout=0.5))
    elapsed = time.monotonic() - started

    assert texts(events) == ["Hel", "lo"]
    assert err.code == "timeout" and err.retryable
    assert 0.5 <= elapsed < 2.0
    assert await asyncio.to_thread(server.completion_requests[0].disconnected.wait, 2)  # the stream was closed
    assert len(server.completion_requests) == 1


async def test_stall_before_any_output_is_retried(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("text.sse", cut_after=1), recorded("text.sse"))
    events = await collect(make_provider(server, stall_timeout=0.3))

    assert texts(events) == ["Hel", "lo", " world", "."]
    assert len(server.completion_requests) == 2


@pytest.mark.parametrize(("status", "error_type", "code", "expected"), [
    (401, "invalid_request_error", "invalid_api_key", "auth_error"),
    (403, "permission_error", None, "auth_error"),
    (400, "invalid_request_error", "context_length_exceeded", "bad_request"),
    (404, "invalid_request_error", "model_not_found", "bad_request"),
])
async def test_client_errors_are_not_retried_and_never_echo_the_key(
        server: FakeOpenAIServer, status: int, error_type: str, code: str | None, expected: str) -> None:
    server.enqueue(http_error(status, f"Incorrect API key provided: {API_KEY}", error_type, code), recorded("text.sse"))
    _, err = await collect_until_error(make_provider(server))

    assert (err.code, err.retryable, err.status) == (expected, False, status)
    assert len(server.completion_requests) == 1
    assert API_KEY not in err.message and "[redacted]" in err.message


async def test_the_key_never_reaches_the_logs(server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture) -> None:
    server.enqueue(http_error(401, "bad key", "invalid_request_error", "invalid_api_key"))
    with caplog.at_level(logging.DEBUG):
        await collect_until_error(make_provider(server))
    assert caplog.records  # the SDK logged its request at DEBUG
    assert API_KEY not in caplog.text


async def test_unreachable_server_is_provider_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider(api_key=API_KEY, base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(ProviderError) as caught:
        await collect(provider)
    assert caught.value.code == "provider_unavailable" and caught.value.retryable


async def test_cancellation_propagates_and_closes_the_stream(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("text.sse", cut_after=2))
    await cancel_after_first_text(make_provider(server, stall_timeout=30))
    assert await asyncio.to_thread(server.completion_requests[0].disconnected.wait, 2)


# ---- the agent loop, settings and checks ---------------------------------------------------------


async def test_agent_loop_runs_parallel_calls_and_sends_their_results_back(server: FakeOpenAIServer) -> None:
    server.enqueue(recorded("parallel_tool_calls.sse"), recorded("text.sse"))
    calls: list[dict[str, Any]] = []

    async def weather(tool_input: dict[str, Any], ctx: ToolContext) -> str:
        calls.append(tool_input)
        return f"sunny in {tool_input['city']}"

    tools = {"get_weather": AgentTool("get_weather", WEATHER_TOOL["description"], WEATHER_TOOL["input_schema"], weather)}
    events = [e async for e in run_agent_loop(
        provider=make_provider(server), system="Sys.", messages=[{"role": "user", "content": "Oslo and Lima?"}],
        tools=tools, model=MODEL, max_tokens=200, temperature=0.0)]

    assert calls == [{"city": "Oslo"}, {"city": "Lima"}]
    assert [e.result.text for e in events if isinstance(e, AgentToolComplete)] == ["sunny in Oslo", "sunny in Lima"]
    assert isinstance(events[-1], AgentComplete) and events[-1].stop_reason == "end_turn"
    second = server.completion_requests[1].body["messages"]
    assert second[2]["tool_calls"][1]["id"] == "call_D4e5F6"
    assert second[3:] == [
        {"role": "tool", "tool_call_id": "call_A1b2C3", "content": as_data("tool:get_weather", "sunny in Oslo")},
        {"role": "tool", "tool_call_id": "call_D4e5F6", "content": as_data("tool:get_weather", "sunny in Lima")},
    ]


def test_chat_provider_openai_is_built_from_settings(settings: Any) -> None:
    settings.CHAT_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:11434/v1"
    settings.OPENAI_API_KEY = API_KEY
    settings.CHAT_PROVIDER_STALL_TIMEOUT = 7.0
    assert chat_settings.CHAT_PROVIDER == "chat.providers.openai.OpenAIProvider"
    provider = OpenAIProvider.from_settings(chat_settings)
    assert (provider.base_url, provider.stall_timeout) == ("http://127.0.0.1:11434/v1", 7.0)
    assert API_KEY not in repr(provider.options)
    assert [e for e in check_chat_settings() if e.id.startswith("chat.E")] == []


def test_openai_without_key_or_base_url_is_a_check_error(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings.CHAT_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = None
    settings.OPENAI_API_KEY = ""
    errors = [e for e in check_chat_settings() if e.id == "chat.E007"]
    assert len(errors) == 1 and "OPENAI_BASE_URL" in errors[0].msg


def test_an_unknown_provider_is_a_check_error_naming_the_choices(settings: Any) -> None:
    settings.CHAT_PROVIDER = "opneai"
    errors = [e for e in check_chat_settings() if e.id == "chat.E003"]
    assert len(errors) == 1 and "opneai" in errors[0].msg and "openai" in (errors[0].hint or "")
