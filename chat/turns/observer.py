"""What operations see of a turn: its Prometheus metrics and, when tracing is on, its OpenTelemetry spans.

The turn reports each event once (`turn_started`, `tool_started`, `model_call_ended`, ...); this records it. Every
metric name, label, span name and attribute of a turn is written here and in `chat.infra.metrics` / `chat.infra.tracing`.
"""
from __future__ import annotations

import json
import time
from typing import Any

from chat.conf import chat_settings
from chat.infra import metrics, tracing
from chat.providers.base import Provider, Usage


def model_recorded(provider: Provider) -> str:
    """The model name a turn's metrics, price and spans use (and a regenerated run stores): CHAT_MODEL, or
    "offline" for the offline provider (its price in CHAT_PRICES is zero)."""
    return chat_settings.CHAT_MODEL if not provider.is_offline else "offline"


class TurnObserver:
    """One turn's metrics and spans; without tracing (`tracing.ENABLED` off at the turn's start) no span is made."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider  # the provider's name (a metric label, gen_ai.provider.name)
        self.model = model  # as model_recorded() gives it
        self.span: Any = None  # the turn's span, when tracing is on
        self.tool_spans: dict[str, Any] = {}  # tool_use_id -> its span, until the call completes
        self.call_started = time.perf_counter()  # the current model call's start: its latency and its span
        self.call_started_ns = time.time_ns()

    def turn_started(self, *, page: str, conversation_id: int, run_id: str, message: str) -> None:
        """The turn's span, made current in the run's task (database spans nest under it); the question only with
        content capture on."""
        if not tracing.ENABLED:
            return
        self.span = tracing.turn_span(page=page, conversation_id=conversation_id, run_id=run_id, provider=self.provider, model=self.model)
        tracing.activate(self.span)
        if tracing.capture_content():
            self.span.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": message}]}]))

    def model_call_started(self) -> None:
        """A model call starts now (the turn's first, or the one after tool results)."""
        self.call_started = time.perf_counter()
        self.call_started_ns = time.time_ns()

    def _model_span(self) -> Any:
        return tracing.model_span(self.span, provider=self.provider, model=self.model, max_tokens=chat_settings.CHAT_MAX_TOKENS,
                                  temperature=chat_settings.CHAT_TEMPERATURE, start_ns=self.call_started_ns)

    def model_call_ended(self, *, stop_reason: str, usage: Usage, output: str) -> None:
        """A model call ended: its latency, its span (`output`, the answer so far, only with content capture on); the
        next one starts now."""
        metrics.PROVIDER_LATENCY.labels(self.provider, self.model).observe(time.perf_counter() - self.call_started)
        if self.span is not None:
            tracing.model_span_end(self._model_span(), stop_reason=stop_reason, input_tokens=usage.input_tokens,
                                   output_tokens=usage.output_tokens, model=self.model, end_ns=time.time_ns(),
                                   output=output if tracing.capture_content() else None)
        self.model_call_started()

    def model_call_failed(self, code: str) -> None:
        """The model call failed with the wire error `code`."""
        metrics.PROVIDER_ERRORS.labels(self.provider, code).inc()
        if self.span is not None:
            tracing.error_end(self._model_span(), code)

    def tool_started(self, *, tool_use_id: str, name: str, arguments: Any) -> None:
        """A tool call's span starts (its arguments only with content capture on)."""
        if self.span is not None:
            self.tool_spans[tool_use_id] = tracing.tool_span(
                self.span, name=name, tool_use_id=tool_use_id, start_ns=time.time_ns(),
                arguments=arguments if tracing.capture_content() else None)

    def tool_ended(self, *, tool_use_id: str, name: str, is_error: bool, duration_ms: float, result: str) -> None:
        """A tool call ended: its count, duration and span (`result` only with content capture on); the next model
        call, which reads its result, starts now."""
        metrics.TOOL_CALLS.labels(name, "error" if is_error else "ok").inc()
        metrics.TOOL_DURATION.labels(name).observe(duration_ms / 1000)
        span = self.tool_spans.pop(tool_use_id, None)
        if span is not None:
            if tracing.capture_content():
                span.set_attribute("gen_ai.tool.call.result", result[:10_000])
            if is_error:
                tracing.error_end(span, "tool_error")
            else:
                span.end()
        self.model_call_started()

    def turn_ended(self, *, terminal: str, code: str, usage: dict[str, Any], cost: float | None, ttft_ms: float | None,
                   output: str) -> None:
        """Once per turn: how it ended (`terminal`, the error `code` or ""), its tokens and cost, and the end of its
        span and of any tool span still open."""
        metrics.RUNS_FINISHED.labels(terminal, code).inc()
        if ttft_ms is not None:
            metrics.TIME_TO_FIRST_TEXT.observe(ttft_ms / 1000)
        metrics.TOKENS.labels(self.model, "input").inc(usage.get("input_tokens", 0))
        metrics.TOKENS.labels(self.model, "output").inc(usage.get("output_tokens", 0))
        if cost:
            metrics.COST.labels(self.model).inc(cost)
        if self.span is None:
            return
        for span in self.tool_spans.values():
            tracing.error_end(span, code or "cancelled")
        self.span.set_attribute("gen_ai.usage.input_tokens", usage.get("input_tokens", 0))
        self.span.set_attribute("gen_ai.usage.output_tokens", usage.get("output_tokens", 0))
        self.span.set_attribute("pagechat.run.terminal", terminal)
        if tracing.capture_content():
            self.span.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": output}]}]))
        if code:
            tracing.error_end(self.span, code)
        else:
            self.span.end()
        self.span = None
