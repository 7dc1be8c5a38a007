"""A local fake of the Anthropic Messages API: real HTTP on 127.0.0.1, real SSE bytes, scripted per request.

In tests:
    with FakeAnthropicServer() as server:
        server.enqueue(text_response("Hel", "lo"))
        provider = AnthropicProvider(api_key="k", base_url=server.base_url)

From another process: `python -m tests.fakes.anthropic_server --port 0 --script FILE` prints
`LISTENING <port>`; FILE holds a JSON list of scenarios or {"scenarios": [...], "default": {...}}.
Over HTTP: POST /_fake/scenarios (a scenario or a list) enqueues, GET /_fake/requests lists what was
received, POST /_fake/reset clears both.

A scenario is JSON-serialisable: {"status": 429, "headers": {...}, "body": {...}} answers with an
HTTP error; {"steps": [...]} answers 200 with an SSE stream, each step one of
["event", name, data] | ["sleep", seconds] | ["hang"] (wait until the client hangs up).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

Scenario = dict[str, Any]
Step = list[Any]

_ids = itertools.count(1)


# ---- scenario builders ---------------------------------------------------------------------------


class MessageBuilder:
    """Builds the SSE steps of one streamed message, block by block, as the real API orders them."""

    def __init__(self, *, input_tokens: int = 12, pace: float = 0.0, model: str | None = None) -> None:
        self.pace = pace  # seconds slept before each delta, for slow-token scenarios
        self.output_tokens = 1  # the API counts from 1 in message_start
        self._index = -1
        self._open = False
        message = {
            "id": f"msg_fake_{next(_ids):04d}", "type": "message", "role": "assistant",
            "model": model,  # None: the server fills in the requested model
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }
        self.steps: list[Step] = [
            ["event", "message_start", {"type": "message_start", "message": message}],
            ["event", "ping", {"type": "ping"}],
        ]

    def text(self, *chunks: str) -> Self:
        """Open a text block and stream `chunks` into it as text_delta events."""
        self._start_block({"type": "text", "text": ""})
        for chunk in chunks:
            self._delta({"type": "text_delta", "text": chunk})
        return self

    def tool_use(self, name: str, fragments: Iterable[str], *, tool_id: str | None = None) -> Self:
        """Open a tool_use block whose input JSON arrives as the given input_json_delta fragments."""
        tool_id = tool_id or f"toolu_fake_{next(_ids):04d}"
        self._start_block({"type": "tool_use", "id": tool_id, "name": name, "input": {}})
        for fragment in fragments:
            self._delta({"type": "input_json_delta", "partial_json": fragment})
        return self

    def end(self, stop_reason: str = "end_turn") -> Scenario:
        """Close the message normally: message_delta (cumulative usage) then message_stop."""
        self._close_block()
        self.steps.append(["event", "message_delta", {
            "type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": self.output_tokens},
        }])
        self.steps.append(["event", "message_stop", {"type": "message_stop"}])
        return {"steps": self.steps}

    def error(self, error_type: str = "overloaded_error", message: str = "Overloaded") -> Scenario:
        """Break off mid-stream (after HTTP 200) with an `event: error` frame, as the API does."""
        self.steps.append(["event", "error", {"type": "error", "error": {"type": error_type, "message": message}}])
        return {"steps": self.steps}

    def hang(self) -> Scenario:
        """Stop sending anything and keep the connection open until the client hangs up."""
        self.steps.append(["hang"])
        return {"steps": self.steps}

    def _start_block(self, block: dict[str, Any]) -> None:
        self._close_block()
        self._index += 1
        self._open = True
        self.steps.append(["event", "content_block_start",
                           {"type": "content_block_start", "index": self._index, "content_block": block}])

    def _delta(self, delta: dict[str, Any]) -> None:
        if self.pace:
            self.steps.append(["sleep", self.pace])
        self.output_tokens += 1
        self.steps.append(["event", "content_block_delta",
                           {"type": "content_block_delta", "index": self._index, "delta": delta}])

    def _close_block(self) -> None:
        if self._open:
            self.steps.append(["event", "content_block_stop", {"type": "content_block_stop", "index": self._index}])
            self._open = False


TITLE_REQUEST = "Write a title of at most six words"  # chat.turns.titles.TITLE_PROMPT's opening


def text_response(*chunks: str, pace: float = 0.0, input_tokens: int = 12) -> Scenario:
    """A text answer streamed in `chunks`, `pace` seconds apart."""
    return MessageBuilder(input_tokens=input_tokens, pace=pace).text(*chunks).end("end_turn")


def tool_use_response(
    name: str,
    tool_input: dict[str, Any] | None = None,
    *,
    raw_json: str | None = None,
    fragment_size: int = 6,
    text: str = "",
    tool_id: str | None = None,
) -> Scenario:
    """Optional text, then one tool call whose input JSON (or `raw_json`, possibly malformed) arrives in fragments."""
    raw = raw_json if raw_json is not None else json.dumps(tool_input or {})
    builder = MessageBuilder()
    if text:
        builder.text(text)
    fragments = [raw[i:i + fragment_size] for i in range(0, len(raw), fragment_size)]
    return builder.tool_use(name, fragments, tool_id=tool_id).end("tool_use")


def http_error(status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> Scenario:
    """An HTTP error answer with the API's JSON error body."""
    return {"status": status, "headers": headers or {},
            "body": {"type": "error", "error": {"type": error_type, "message": message}}}


def rate_limited(retry_after: str = "0.01") -> Scenario:
    """HTTP 429 with a retry-after header (seconds; the SDK accepts fractions)."""
    return http_error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.",
                      {"retry-after": retry_after})


def overloaded(retry_after: str | None = "0.01") -> Scenario:
    """HTTP 529 overloaded; a retry-after keeps test backoff short (the SDK's own starts at 0.5 s)."""
    return http_error(529, "overloaded_error", "Overloaded", {"retry-after": retry_after} if retry_after else {})


def error_mid_stream(*chunks: str, error_type: str = "overloaded_error", message: str = "Overloaded") -> Scenario:
    """HTTP 200, some text, then an `event: error` frame."""
    builder = MessageBuilder()
    if chunks:
        builder.text(*chunks)
    return builder.error(error_type, message)


def stall(*chunks: str) -> Scenario:
    """HTTP 200, some text, then silence with the connection held open."""
    builder = MessageBuilder()
    if chunks:
        builder.text(*chunks)
    return builder.hang()


# ---- the server ----------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as received; `disconnected` is set when the client hung up before the answer ended."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any
    disconnected: threading.Event = field(default_factory=threading.Event)

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body,
                "disconnected": self.disconnected.is_set()}


class FakeAnthropicServer:
    """Serves scripted scenarios in order, one per POST /v1/messages; thread-safe to script and inspect."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 scenarios: Iterable[Scenario] = (), default: Scenario | None = None) -> None:
        self.host = host
        self.port = port
        self.default = default  # served when the queue is empty; None answers 500 instead
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Scenario] = deque(scenarios)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        """The SDK's base_url: the server root, without /v1."""
        return f"http://{self.host}:{self.port}"

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/v1/messages"]

    def enqueue(self, *scenarios: Scenario) -> None:
        with self._lock:
            self._queue.extend(scenarios)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    # -- running in a background thread (sync or async tests) --

    def start(self) -> Self:
        """Serve from a daemon thread with its own event loop; returns once the port is bound."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self.serve(on_ready=lambda _port: ready.set()))
            except BaseException as exc:  # surface bind errors to the starting thread
                failure.append(exc)
                ready.set()

        self._thread = threading.Thread(target=run, name="fake-anthropic", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        """Stop serving, cut any hanging streams, and join the thread."""
        if self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # loop already closed
                self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the asyncio server itself (also used directly by the CLI) --

    async def serve(self, on_ready: Callable[[int], None] | None = None) -> None:
        """Serve until stop(); `on_ready(port)` runs once the socket is bound."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = server.sockets[0].getsockname()[1]
        if on_ready:
            on_ready(self.port)
        async with server:
            await self._stopping.wait()
            server.close()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)  # type: ignore[arg-type]
        try:
            request = await self._read_request(reader)
            if request is not None:
                await self._respond(request, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to answer
        finally:
            self._handlers.discard(task)  # type: ignore[arg-type]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        return RecordedRequest(method, target.split("?", 1)[0], headers, body)

    async def _respond(self, req: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if req.path == "/_fake/scenarios" and req.method == "POST":
            self.enqueue(*(req.body if isinstance(req.body, list) else [req.body]))
            return await self._send_json(writer, 200, {"ok": True})
        if req.path == "/_fake/requests" and req.method == "GET":
            with self._lock:
                recorded = [r.as_dict() for r in self.requests]
            return await self._send_json(writer, 200, recorded)
        if req.path == "/_fake/reset" and req.method == "POST":
            self.reset()
            return await self._send_json(writer, 200, {"ok": True})
        if req.path != "/v1/messages" or req.method != "POST":
            return await self._send_scenario(writer, reader, req,
                                             http_error(404, "not_found_error", f"no route {req.method} {req.path}"))
        if isinstance(req.body, dict) and TITLE_REQUEST in json.dumps(req.body.get("system", "")):
            # the product's own title call after a conversation's first answer: answered apart, so it neither
            # takes a test's scripted answer nor shows among the turn's requests
            return await self._send_scenario(writer, reader, req, text_response("Fake", " title"))
        with self._lock:
            self.requests.append(req)
            scenario = self._queue.popleft() if self._queue else self.default
        if not isinstance(req.body, dict) or req.body.get("stream") is not True:
            scenario = http_error(400, "invalid_request_error", "the fake server only serves stream: true")
        elif scenario is None:
            # x-should-retry: false, so a missing script fails the test at once instead of after retries
            scenario = http_error(500, "api_error", "fake server: no scenario scripted", {"x-should-retry": "false"})
        await self._send_scenario(writer, reader, req, scenario)

    async def _send_scenario(self, writer: asyncio.StreamWriter, reader: asyncio.StreamReader,
                             req: RecordedRequest, scenario: Scenario) -> None:
        if "steps" not in scenario:
            return await self._send_json(writer, scenario["status"], scenario["body"], scenario.get("headers", {}))
        writer.write(_head(200, {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}))
        model = req.body.get("model") if isinstance(req.body, dict) else None
        try:
            for step in scenario["steps"]:
                if step[0] == "event":
                    data = step[2]
                    if step[1] == "message_start" and data["message"].get("model") is None:
                        data = {**data, "message": {**data["message"], "model": model}}
                    writer.write(f"event: {step[1]}\ndata: {json.dumps(data)}\n\n".encode())
                    await writer.drain()
                elif step[0] == "sleep":
                    await asyncio.sleep(step[1])
                elif step[0] == "hang":
                    while await reader.read(4096):  # b"" once the client closes its side
                        pass
                    req.disconnected.set()
                    return
        except ConnectionError:
            req.disconnected.set()

    async def _send_json(self, writer: asyncio.StreamWriter, status: int, body: Any,
                         headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        writer.write(_head(status, {"content-type": "application/json", "content-length": str(len(data)),
                                    **(headers or {})}) + data)
        await writer.drain()


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 529: "Overloaded"}


def _head(status: int, headers: dict[str, str]) -> bytes:
    # Connection: close keeps the framing trivial: a streamed body simply ends when the socket does
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", f"request-id: req_fake_{next(_ids):04d}",
             "connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def main(argv: list[str] | None = None) -> None:
    """CLI: serve in the foreground until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON: a list of scenarios, or {scenarios, default}")
    args = parser.parse_args(argv)
    script: Any = json.loads(args.script.read_text()) if args.script else []
    if isinstance(script, list):
        script = {"scenarios": script}
    server = FakeAnthropicServer(args.host, args.port, scenarios=script.get("scenarios", []),
                                 default=script.get("default"))

    async def run() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.create_task(server.serve(on_ready=lambda port: print(f"LISTENING {port}", flush=True)))
        await asyncio.sleep(0)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: server._stopping.set() if server._stopping else None)
        await task

    asyncio.run(run())


if __name__ == "__main__":
    main()
