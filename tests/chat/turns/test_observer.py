"""A turn's spans, as its observer makes them: a failed model call and a failed turn end in error with the wire code,
under the turn's span; the model name they record is the one rule (`model_recorded`)."""
from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from chat.conf import chat_settings
from chat.infra import tracing
from chat.providers import scripted as s
from chat.providers.base import ProviderError
from chat.providers.offline import OfflineProvider
from chat.providers.scripted import ScriptedProvider
from chat.turns.observer import model_recorded
from tests.conftest import ws_connect


@pytest.fixture
def spans(monkeypatch: Any) -> InMemorySpanExporter:
    """Tracing on, into memory: a tracer of its own (the process's global tracer provider is left alone)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "tracer", provider.get_tracer("pagechat"))
    monkeypatch.setattr(tracing, "ENABLED", True)
    return exporter


@pytest.mark.django_db(transaction=True)
async def test_a_tool_call_then_a_failed_model_call(user: Any, scripted: Any, spans: InMemorySpanExporter, settings: Any) -> None:
    settings.CHAT_TRACE_CONTENT = True
    scripted.enqueue(
        s.tool_call("calculate", {"expression": "6*7"}),
        [ProviderError("overloaded", "the model is overloaded", retryable=True)],
    )
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("what is 6*7, lilac heron?", context={"current_page": "home"})
    events = await ws.until_terminal()
    await ws.close()
    assert events[-1]["type"] == "error" and events[-1]["code"] == "overloaded"

    finished = spans.get_finished_spans()
    turn = next(sp for sp in finished if sp.name == "invoke_agent home")
    assert turn.attributes is not None and turn.attributes["pagechat.run.id"] == events[-1]["run_id"]
    assert turn.attributes["gen_ai.request.model"] == chat_settings.CHAT_MODEL == model_recorded(ScriptedProvider())
    assert turn.attributes["pagechat.run.terminal"] == "error" and turn.attributes["error.type"] == "overloaded"
    assert turn.status.status_code == StatusCode.ERROR and "lilac heron" in str(turn.attributes["gen_ai.input.messages"])
    assert turn.attributes["gen_ai.usage.input_tokens"] == 10  # the scripted tool call's usage
    children = [sp for sp in finished if sp.parent is not None and sp.parent.span_id == turn.context.span_id]
    assert sorted(sp.name for sp in children) == [f"chat {chat_settings.CHAT_MODEL}"] * 2 + ["execute_tool calculate"]
    asked, failed = sorted((sp for sp in children if sp.name.startswith("chat ")), key=lambda sp: sp.start_time or 0)
    assert asked.attributes is not None and asked.attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert asked.status.status_code != StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["error.type"] == "overloaded"
    assert failed.status.status_code == StatusCode.ERROR and "gen_ai.response.model" not in failed.attributes
    tool = next(sp for sp in children if sp.name == "execute_tool calculate")
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.call.result"] == "6*7 = 42"
    assert tool.attributes["gen_ai.tool.call.arguments"] == "{\"expression\": \"6*7\"}"
    assert (asked.end_time or 0) <= (tool.start_time or 0) and (tool.end_time or 0) <= (failed.start_time or 0)


@pytest.mark.django_db(transaction=True)
async def test_no_span_without_tracing(user: Any, scripted: Any, monkeypatch: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "tracer", provider.get_tracer("pagechat"))  # ENABLED stays off
    scripted.enqueue(s.text("fine"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("hello")
    assert (await ws.until_terminal())[-1]["type"] == "complete"
    await ws.close()
    assert exporter.get_finished_spans() == ()


def test_the_model_recorded_is_offline_for_the_offline_provider(settings: Any) -> None:
    settings.CHAT_MODEL = "claude-sonnet-5"
    assert model_recorded(OfflineProvider()) == "offline"
    assert model_recorded(ScriptedProvider()) == "claude-sonnet-5"
