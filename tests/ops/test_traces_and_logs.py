"""Traces: a live daphne exports a turn's spans over OTLP/HTTP (protobuf) to a collector inside the test, with the
GenAI semantic-convention attributes, Django and database spans, and no message text unless enabled.
Logs: a turn's line is one JSON object carrying its run id (and no message text)."""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

from tests.ops.conftest import Daphne, http, token_for


class Collector:
    """A minimal OTLP/HTTP trace receiver: POST /v1/traces with an ExportTraceServiceRequest (protobuf)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                assert self.path == "/v1/traces" and self.headers.get("Content-Type") == "application/x-protobuf"
                request = ExportTraceServiceRequest.FromString(body)
                collector.receive(request)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.lock = threading.Lock()

    def receive(self, request: ExportTraceServiceRequest) -> None:
        with self.lock:
            self.requests += 1
            for resource_spans in request.resource_spans:
                service = {a.key: _value(a.value) for a in resource_spans.resource.attributes}.get("service.name")
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append({
                            "name": span.name, "service": service, "scope": scope_spans.scope.name,
                            "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(), "parent": span.parent_span_id.hex(),
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                            "status": span.status.code, "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                        })

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 20) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                spans = list(self.spans)
            if predicate(spans):
                return spans
            time.sleep(0.1)
        raise AssertionError(f"spans never matched; got {[s['name'] for s in self.spans]}")


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    c = Collector()
    c.thread.start()
    yield c
    c.server.shutdown()


def _turn(server: Daphne, token: str, message: str) -> dict[str, Any]:
    body = json.dumps({"client_message_id": str(uuid.uuid4()), "message": message}).encode()
    status, _, answer = http("POST", f"{server.url}/api/chat", body=body, headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    assert status == 200, answer[:500]
    return dict(json.loads(answer))


def test_turn_spans_are_exported_with_gen_ai_attributes(start_daphne: Callable[..., Daphne], collector: Collector, ops_dir: Any) -> None:
    server = start_daphne("traced", OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_SERVICE_NAME="pagechat-test",
                          OTEL_BSP_SCHEDULE_DELAY="100", CHAT_OFFLINE_DELAY="0")
    token = token_for(ops_dir / "traced.sqlite3", "demo")
    secret_words = "calculate 6*7 for the purple giraffe"
    answer = _turn(server, token, secret_words)
    run_id = answer["run_id"]
    assert answer["tool_history"], "the offline model calls the calculator for this message"

    def complete(spans: list[dict[str, Any]]) -> bool:
        names = [s["name"] for s in spans]
        return any(n.startswith("invoke_agent") and s["attributes"].get("pagechat.run.id") == run_id for n, s in zip(names, spans)) \
            and any(n.startswith("execute_tool") for n in names) and any(n.startswith("chat ") for n in names) \
            and any(s["scope"].startswith("opentelemetry.instrumentation.django") for s in spans)

    spans = collector.wait_for(complete)
    turn = next(s for s in spans if s["attributes"].get("pagechat.run.id") == run_id)
    assert turn["service"] == "pagechat-test"
    assert turn["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert turn["attributes"]["gen_ai.conversation.id"] == str(answer["conversation_id"])
    assert turn["attributes"]["gen_ai.request.model"] == "offline"
    in_turn = [s for s in spans if s["trace_id"] == turn["trace_id"]]
    models = [s for s in in_turn if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert len(models) == 2  # the call that asked for the tool, and the one that answered after it
    for m in models:
        assert m["parent"] == turn["span_id"] and m["name"] == "chat offline"
        assert m["attributes"]["gen_ai.provider.name"] == "offline"
        assert m["attributes"]["gen_ai.request.max_tokens"] == 2000
        assert isinstance(m["attributes"]["gen_ai.usage.input_tokens"], int)
        assert isinstance(m["attributes"]["gen_ai.usage.output_tokens"], int)
        assert m["attributes"]["gen_ai.response.finish_reasons"] in (["tool_use"], ["end_turn"])
        assert turn["start"] <= m["start"] <= m["end"] <= turn["end"]
    tool = next(s for s in in_turn if s["attributes"].get("gen_ai.operation.name") == "execute_tool")
    assert tool["name"] == "execute_tool calculate" and tool["attributes"]["gen_ai.tool.name"] == "calculate"
    assert tool["attributes"]["gen_ai.tool.call.id"].startswith("toolu_") and tool["parent"] == turn["span_id"]
    # database spans from the standard instrumentation, inside the turn
    assert any(s["scope"].startswith("opentelemetry.instrumentation.sqlite3") for s in in_turn)
    # Django's request span (the POST /api/chat that started it)
    assert any(s["scope"].startswith("opentelemetry.instrumentation.django") for s in spans)
    # no message content without CHAT_TRACE_CONTENT
    everything = json.dumps(spans)
    assert "purple giraffe" not in everything and "gen_ai.input.messages" not in everything


def test_message_content_only_when_enabled(start_daphne: Callable[..., Daphne], collector: Collector, ops_dir: Any) -> None:
    server = start_daphne("traced-content", OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_BSP_SCHEDULE_DELAY="100",
                          CHAT_TRACE_CONTENT="true", CHAT_OFFLINE_DELAY="0")
    token = token_for(ops_dir / "traced-content.sqlite3", "demo")
    answer = _turn(server, token, "hello there, orange walrus")
    spans = collector.wait_for(lambda ss: any(s["attributes"].get("pagechat.run.id") == answer["run_id"] for s in ss))
    turn = next(s for s in spans if s["attributes"].get("pagechat.run.id") == answer["run_id"])
    assert "orange walrus" in turn["attributes"]["gen_ai.input.messages"]
    assert json.loads(turn["attributes"]["gen_ai.output.messages"])[0]["role"] == "assistant"


def test_a_turns_log_line_is_json_with_its_run_id(ops_server: Daphne, demo_token: str) -> None:
    """DEBUG off: LOG_FORMAT defaults to JSON; the turn's own line carries its ids, and no message text."""
    answer = _turn(ops_server, demo_token, "hello from the teal pelican")
    deadline = time.monotonic() + 10
    line = None
    while line is None and time.monotonic() < deadline:
        for raw in ops_server.log().splitlines():
            if answer["run_id"] in raw and "run finished" in raw:
                line = raw
        time.sleep(0.1)
    assert line is not None, ops_server.log()[-2000:]
    record = json.loads(line)
    assert record["message"] == "run finished" and record["level"] == "INFO"
    assert record["run_id"] == answer["run_id"] and record["conversation_id"] == answer["conversation_id"]
    assert isinstance(record["user_id"], int) and record["error_code"] is None and record["terminal"] == "complete"
    assert "teal pelican" not in ops_server.log()
