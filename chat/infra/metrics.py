"""Prometheus metrics of the chat engine (prometheus_client), multiprocess-safe across server processes.

With `PROMETHEUS_MULTIPROC_DIR` set (before the process starts), every process writes its values to files in
that directory and `/metrics` (chat.ops.views) sums them over all processes; without it, values live in this
process's default registry. Recording is cheap and never per token: counters are incremented once per event
batch, histograms observed once per turn, model call or tool call.
"""
from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.registry import REGISTRY

# Server-added latency buckets (seconds): the bench bars are 5-50 ms; the tail goes to model-sized waits.
FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SLOW_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)

RUNS_STARTED = Counter("chat_runs_started", "Runs started (one per accepted message)", ["provider"])
RUNS_FINISHED = Counter("chat_runs_finished", "Runs ended, by terminal event type and error code ('' unless error)",
                        ["terminal", "code"])
TIME_TO_FIRST_EVENT = Histogram("chat_time_to_first_event_seconds",
                                "From the message's arrival to its run's first event (the acknowledgement)", buckets=FAST_BUCKETS)
TIME_TO_FIRST_TEXT = Histogram("chat_time_to_first_text_seconds",
                               "From the run's start to its first text event (includes the model's own latency)", buckets=SLOW_BUCKETS)
EVENTS_SENT = Counter("chat_events_sent", "Events sent to clients, by transport", ["transport"])
TOKENS = Counter("chat_tokens", "Model tokens, by model and direction (input/output)", ["model", "direction"])
COST = Counter("chat_cost_usd", "Model cost in US dollars, by model (when the provider reports a price)", ["model"])
PROVIDER_LATENCY = Histogram("chat_provider_call_seconds", "Duration of one model call (stream start to end)",
                             ["provider", "model"], buckets=SLOW_BUCKETS)
PROVIDER_ERRORS = Counter("chat_provider_errors", "Failed model calls, by error code", ["provider", "code"])
TOOL_CALLS = Counter("chat_tool_calls", "Tool calls, by tool and outcome (ok/error)", ["tool", "outcome"])
TOOL_DURATION = Histogram("chat_tool_call_seconds", "Duration of one tool call", ["tool"], buckets=SLOW_BUCKETS)
OPEN_SOCKETS = Gauge("chat_open_sockets", "Open chat websockets", multiprocess_mode="livesum")
RUN_LOG_LAG = Histogram("chat_run_log_lag_seconds",
                        "From an event's creation to its write into the shared run log (per written batch)", buckets=FAST_BUCKETS)
RATE_LIMITED = Counter("chat_rate_limited", "Refusals by a per-user limit, by limit (messages/sockets/running)", ["limit"])

# bound children for the hot paths (a label lookup is a dict access and a lock; skip it there)
WS_EVENTS = EVENTS_SENT.labels(transport="websocket")
SSE_EVENTS = EVENTS_SENT.labels(transport="sse")


def exposition() -> bytes:
    """The metrics in Prometheus' text format: every process's (multiprocess mode) or this one's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def mark_process_dead(pid: int | None = None) -> None:
    """Drop an exited process's live gauges (called at exit; a supervisor may call it for a crashed pid)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(pid if pid is not None else os.getpid())
