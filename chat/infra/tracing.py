"""OpenTelemetry traces: a span per turn, model call and tool call with the GenAI semantic conventions (`gen_ai.*`).

`configure()` (called once at start-up by the app) installs an OTLP/HTTP exporter only when
`OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and the `otel` extra is installed, plus the standard Django and
database (psycopg, sqlite3) instrumentation; the usual `OTEL_*` variables configure it (service name, headers,
batching, sampling). Without it `ENABLED` stays False and the engine creates no span at all.
Message text and tool inputs/outputs go on spans only with CHAT_TRACE_CONTENT (or the standard
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).
"""
from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

log = logging.getLogger(__name__)
ENABLED = False
_lock = threading.Lock()
tracer = trace.get_tracer("pagechat")


def configure() -> bool:
    """Install the OTLP exporter and the Django/database instrumentation when an endpoint is configured; idempotent."""
    global ENABLED
    if not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return False
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    with _lock:
        if ENABLED:
            return True
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:  # the SDK is an extra: say once why no trace leaves, and serve on without them
            log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed "
                        "(pip install \"pagechat[otel]\"): no traces are exported")
            return False

        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "pagechat")})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint, headers, timeout: OTEL_* variables
        trace.set_tracer_provider(provider)
        _instrument()
        ENABLED = True
    return True


def _instrument() -> None:
    """Django requests and database queries, by the standard instrumentation packages."""
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    DjangoInstrumentor().instrument()
    try:
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

        PsycopgInstrumentor().instrument()
    except Exception:  # psycopg missing or already instrumented
        log.debug("psycopg instrumentation not installed", exc_info=True)
    from opentelemetry.instrumentation.sqlite3 import SQLite3Instrumentor

    SQLite3Instrumentor().instrument()


def capture_content() -> bool:
    """Message content on spans: only when explicitly enabled."""
    from chat.conf import chat_settings

    return bool(chat_settings.CHAT_TRACE_CONTENT) or os.environ.get(
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").lower() == "true"


def provider_name(provider: str) -> str:
    """`gen_ai.provider.name` of a provider: the semantic conventions' value where there is one."""
    return {"anthropic": "anthropic", "openai": "openai"}.get(provider, provider)


def turn_span(*, page: str, conversation_id: int, run_id: str, provider: str, model: str) -> Span:
    """The turn: an `invoke_agent` span (the caller ends it)."""
    return tracer.start_span(f"invoke_agent {page or 'pagechat'}", kind=trace.SpanKind.INTERNAL, attributes={
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": page or "pagechat",
        "gen_ai.provider.name": provider_name(provider),
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": str(conversation_id),
        "pagechat.run.id": run_id,
    })


def activate(span: Span) -> None:
    """Make the turn's span current in the run's task (its own context): database spans nest under it."""
    from opentelemetry import context

    context.attach(trace.set_span_in_context(span))


def model_span(parent: Span, *, provider: str, model: str, max_tokens: int, temperature: float | None,
               start_ns: int) -> Span:
    """One model call (`chat {model}`), started at `start_ns` under the turn."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name(provider),
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
    }
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    return tracer.start_span(f"chat {model}", context=trace.set_span_in_context(parent), kind=trace.SpanKind.CLIENT,
                             attributes=attributes, start_time=start_ns)


def model_span_end(span: Span, *, stop_reason: str, input_tokens: int, output_tokens: int, model: str, end_ns: int,
                   output: str | None = None) -> None:
    span.set_attribute("gen_ai.response.finish_reasons", [stop_reason])
    span.set_attribute("gen_ai.response.model", model)
    span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
    if output is not None:
        span.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": output}], "finish_reason": stop_reason}]))
    span.end(end_time=end_ns)


def error_end(span: Span, code: str, end_ns: int | None = None) -> None:
    """End a span that failed with a wire error code (`error.type`)."""
    span.set_attribute("error.type", code)
    span.set_status(Status(StatusCode.ERROR, code))
    span.end(end_time=end_ns)


def tool_span(parent: Span, *, name: str, tool_use_id: str, start_ns: int, arguments: Any = None) -> Span:
    """One tool call (`execute_tool {name}`) under the turn."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": tool_use_id,
        "gen_ai.tool.type": "function",
    }
    if arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(arguments, default=str)
    return tracer.start_span(f"execute_tool {name}", context=trace.set_span_in_context(parent), kind=trace.SpanKind.INTERNAL,
                             attributes=attributes, start_time=start_ns)


def force_flush() -> None:
    """Export what is buffered (tests, shutdown)."""
    provider = trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush()
