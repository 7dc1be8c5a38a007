"""A local fake of the OpenAI Chat Completions API: real HTTP on 127.0.0.1 replaying streamed bytes.

The streams are files under tests/fakes/openai_streams/: the bytes a Chat Completions server sends for
`stream: true` (`data: {chunk}` events, then `data: [DONE]`), replayed event by event, `pace` seconds apart.
`llama_cpp_text.sse` was captured from llama.cpp's llama-server (Gemma 3 270M, `make test-real-model` records it
again); the others are written byte for byte in the API's chunk format (first chunk with the role, `usage: null`
on every chunk, the usage chunk with empty `choices`, `[DONE]`), because the small local models call no tools.

    with FakeOpenAIServer() as server:
        server.enqueue(recorded("text_two_chunks.sse"))
        provider = OpenAIProvider(api_key="k", base_url=server.base_url)

A scenario: {"sse": "<bytes as text>", "pace": 0.0, "hang": bool} streams it with HTTP 200 (`hang`: then keep
the connection open, sending nothing); {"status": 429, "headers": {...}, "body": {...}} answers an HTTP error.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropicServer, RecordedRequest, Scenario, _head

STREAMS = Path(__file__).with_name("openai_streams")


def recorded(name: str, *, pace: float = 0.0, hang: bool = False, cut_after: int | None = None) -> Scenario:
    """A recorded stream by file name; `cut_after` N keeps its first N events and then hangs (a stall)."""
    sse = (STREAMS / name).read_text()
    if cut_after is not None:
        sse = "".join(event + "\n\n" for event in _events(sse)[:cut_after])
        hang = True
    return {"sse": sse, "pace": pace, "hang": hang}


def chunks_sse(*chunks: dict[str, Any], done: bool = True) -> str:
    """SSE text for the given chunk objects (for the rare case a test needs to build one)."""
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")


def http_error(status: int, message: str, error_type: str, code: str | None = None, headers: dict[str, str] | None = None) -> Scenario:
    """An HTTP error answer with the API's JSON error body."""
    return {"status": status, "headers": headers or {},
            "body": {"error": {"message": message, "type": error_type, "param": None, "code": code}}}


def _events(sse: str) -> list[str]:
    return [e for e in sse.split("\n\n") if e.strip()]


class FakeOpenAIServer(FakeAnthropicServer):
    """Serves scripted scenarios in order, one per POST /v1/chat/completions."""

    PATH = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        """The SDK's base_url: the server root with /v1."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == self.PATH]

    async def _respond(self, req: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if req.path != self.PATH or req.method != "POST":
            return await self._send_json(writer, 404, {"error": {"message": f"no route {req.method} {req.path}", "type": "invalid_request_error"}})
        with self._lock:
            self.requests.append(req)
            scenario = self._queue.popleft() if self._queue else self.default
        if not isinstance(req.body, dict) or req.body.get("stream") is not True:
            scenario = http_error(400, "the fake server only serves stream: true", "invalid_request_error")
        elif scenario is None:
            scenario = {**http_error(500, "fake server: no scenario scripted", "server_error"), "headers": {"x-should-retry": "false"}}
        if "sse" not in scenario:
            return await self._send_json(writer, scenario["status"], scenario["body"], scenario.get("headers", {}))
        writer.write(_head(200, {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}))
        try:
            for event in _events(scenario["sse"]):
                if scenario.get("pace"):
                    await asyncio.sleep(scenario["pace"])
                writer.write((event + "\n\n").encode())
                await writer.drain()
            if scenario.get("hang"):
                while await reader.read(4096):
                    pass
                req.disconnected.set()
        except ConnectionError:
            req.disconnected.set()
