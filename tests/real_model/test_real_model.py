"""The providers against a real model: llama.cpp's llama-server with Gemma 3 270M (`make test-real-model`).

Not part of `make test` (tests/real_model is outside the default collection): it needs the server built and
the model unpacked by tests/real_model/build_llama.sh, which `make test-real-model` runs first. LLAMA_SERVER
and LLAMA_MODEL name them. Tool calls are not asked of this model (it has no tool-capable chat template);
they stay covered by the recorded streams in tests/chat/providers.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import AsyncClient

from chat.models import Message, Run
from chat.providers.anthropic import AnthropicProvider
from chat.providers.base import MessageEnd, ProviderRequest, TextDelta
from chat.providers.openai import OpenAIProvider
from tests.conftest import token_for, ws_connect

SERVER = os.environ.get("LLAMA_SERVER", "")
MODEL = os.environ.get("LLAMA_MODEL", "")
RECORD = Path(__file__).resolve().parents[1] / "fakes" / "openai_streams" / "llama_cpp_text.sse"

pytestmark = pytest.mark.skipif(not (SERVER and MODEL), reason="run through `make test-real-model`")


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    """llama-server on a free port; yields its root URL once /health answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [SERVER, "-m", MODEL, "--jinja", "-c", "4096", "-t", "2", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{root}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama-server did not start (exit code {proc.poll()})")
            time.sleep(0.5)
        yield root
    finally:
        proc.terminate()
        proc.wait(20)


def request(**overrides: Any) -> ProviderRequest:
    fields: dict[str, Any] = {"system": "You are a helpful assistant. Answer in one short sentence.",
                              "messages": [{"role": "user", "content": "What is the capital of France?"}],
                              "tools": [], "model": "gemma-3-270m", "max_tokens": 40, "temperature": 0.0}
    return ProviderRequest(**{**fields, **overrides})


async def stream_all(provider: Any) -> list[Any]:
    return [event async for event in provider.stream(request())]


def assert_streamed_answer(events: list[Any]) -> None:
    """The mechanics, not the words (a 270M model's answer is not asserted on): text in several deltas, then
    exactly one MessageEnd with a known stop reason and the server's real token counts."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    end = events[-1]
    assert sum(isinstance(e, TextDelta) for e in events) >= 2  # streamed, not one block
    assert text.strip()
    assert isinstance(end, MessageEnd) and sum(isinstance(e, MessageEnd) for e in events) == 1
    assert end.stop_reason in ("end_turn", "max_tokens")
    assert end.usage.input_tokens + end.usage.cache_read_tokens > 10  # the system prompt and question were counted
    assert 0 < end.usage.output_tokens <= 40


async def test_openai_provider_streams_text_and_usage_from_llama_cpp(llama: str) -> None:
    assert_streamed_answer(await stream_all(OpenAIProvider(base_url=f"{llama}/v1", max_retries=0, stall_timeout=60)))


async def test_anthropic_provider_streams_text_and_usage_from_llama_cpp(llama: str) -> None:
    """llama-server also speaks the Messages API (/v1/messages), so the Anthropic SDK's stream parsing runs for real."""
    assert_streamed_answer(await stream_all(AnthropicProvider(base_url=llama, max_retries=0, stall_timeout=60, prompt_caching=False)))


async def test_a_bad_model_server_request_is_a_clean_error(llama: str) -> None:
    """A request the server refuses (a context far beyond -c) ends in a ProviderError code, not a traceback."""
    from chat.providers.base import ProviderError

    huge = request(messages=[{"role": "user", "content": "word " * 9000}])
    with pytest.raises(ProviderError) as caught:
        [e async for e in OpenAIProvider(base_url=f"{llama}/v1", max_retries=0).stream(huge)]
    assert caught.value.code in ("bad_request", "provider_error") and not caught.value.retryable


def use_provider(settings: Any, name: str, llama: str) -> None:
    """CHAT_PROVIDER=`name` against the llama-server, with answers short enough for a CPU."""
    settings.CHAT_PROVIDER = name
    settings.OPENAI_BASE_URL = f"{llama}/v1"
    settings.ANTHROPIC_BASE_URL = llama
    settings.CHAT_MODEL = "gemma-3-270m"
    settings.CHAT_MAX_TOKENS = 40
    settings.CHAT_PROVIDER_STALL_TIMEOUT = 60
    settings.CHAT_PROVIDER_TIMEOUT = 120


async def ws_turn(user: Any, message: str) -> list[dict[str, Any]]:
    """One turn over the websocket: its events, the last of them `complete` (every frame checked against the schema)."""
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat(message)
    events = await ws.until_terminal(timeout=120)
    await ws.close()
    assert events[-1]["type"] == "complete", events[-1]
    return list(events)


@pytest.mark.parametrize("name", ["openai", "anthropic"])
@pytest.mark.django_db(transaction=True)
async def test_a_websocket_turn_through_the_product(llama: str, settings: Any, user: Any, name: str) -> None:
    """A turn over the websocket through the real ASGI app and the provider: text deltas, then `complete` with the
    streamed text and the server's token counts, which the run records (every frame checked against the schema)."""
    use_provider(settings, name, llama)
    events = await ws_turn(user, "What is the capital of France?")
    payload = events[-1]["payload"]
    streamed = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert payload["message"].strip() and streamed.strip()
    usage = payload["usage"]
    assert usage["input_tokens"] + usage.get("cache_read_tokens", 0) > 10 and usage["output_tokens"] > 0
    run = await Run.objects.aget(pk=payload["run_id"])
    assert (run.provider, run.model, run.status) == (name, "gemma-3-270m", "completed")
    assert (run.input_tokens, run.output_tokens, run.cache_read_tokens) == (
        usage["input_tokens"], usage["output_tokens"], usage.get("cache_read_tokens", 0))


@pytest.mark.django_db(transaction=True)
async def test_a_rest_turn_through_the_product_with_chat_provider_openai(llama: str, settings: Any, user: Any) -> None:
    use_provider(settings, "openai", llama)
    from asgiref.sync import sync_to_async

    token = await sync_to_async(token_for)(user)
    response = await AsyncClient().post("/api/chat", {"client_message_id": "real-1", "message": "What is the capital of France?"},
                                        content_type="application/json", headers={"Authorization": f"Token {token}"})
    assert response.status_code == 200, response.content  # the body is checked against the schema by tests/conftest.py
    body = response.json()
    assert body["message"].strip()
    assert body["usage"]["output_tokens"] > 0
    run = await Run.objects.aget(pk=body["run_id"])
    assert (run.provider, run.model, run.status) == ("openai", "gemma-3-270m", "completed")
    assert run.output_tokens == body["usage"]["output_tokens"]


@pytest.mark.parametrize("name", ["openai", "anthropic"])
@pytest.mark.django_db(transaction=True)
async def test_an_answer_cut_at_the_output_limit_is_marked_unfinished(llama: str, settings: Any, user: Any, name: str) -> None:
    """The server's own length stop ("length" / "max_tokens") reaches the client as complete.payload.stop_reason."""
    use_provider(settings, name, llama)
    settings.CHAT_MAX_TOKENS = 6  # far fewer than an essay needs
    end = (await ws_turn(user, "Write a long essay about the history of Paris, with many details."))[-1]
    assert end["payload"]["stop_reason"] == "max_tokens" and end["payload"]["usage"]["output_tokens"] <= 6
    message = await Message.objects.aget(pk=end["payload"]["message_id"])
    assert message.stop_reason == Message.StopReason.MAX_TOKENS


def test_record_a_real_stream(llama: str) -> None:
    """Capture llama.cpp's streamed bytes for the offline replay tests (rewritten only with RECORD_STREAMS=1)."""
    import json

    body = json.dumps({"model": "gemma-3-270m", "max_tokens": 24, "temperature": 0.0, "stream": True,
                       "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": "Say hello in five words."}]}).encode()
    req = urllib.request.Request(f"{llama}/v1/chat/completions", data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as response:
        raw = response.read().decode()
    events = [e for e in raw.split("\n\n") if e.strip()]
    assert events[-1] == "data: [DONE]" and len(events) > 3
    chunks = [json.loads(event.removeprefix("data: ")) for event in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    if os.environ.get("RECORD_STREAMS") == "1":
        RECORD.write_text(raw)
