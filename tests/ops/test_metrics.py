"""Prometheus metrics: a scripted turn, a tool call and a provider error show in them; /metrics is for staff or the
metrics token only; two real daphne processes sharing PROMETHEUS_MULTIPROC_DIR are summed."""
from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import REGISTRY

from chat.providers import scripted as s
from chat.providers.base import ProviderError
from chat.quotas.costs import cost_of
from tests.conftest import ws_connect
from tests.ops.conftest import Daphne, http, token_for


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.django_db(transaction=True)
async def test_metrics_reflect_a_turn_a_tool_call_and_a_provider_error(user: Any, scripted: Any) -> None:
    before = {
        "started": value("chat_runs_started_total", provider="scripted"),
        "complete": value("chat_runs_finished_total", terminal="complete", code=""),
        "error": value("chat_runs_finished_total", terminal="error", code="overloaded"),
        "tool": value("chat_tool_calls_total", tool="calculate", outcome="ok"),
        "tool_n": value("chat_tool_call_seconds_count", tool="calculate"),
        "ttfe": value("chat_time_to_first_event_seconds_count"),
        "ttft": value("chat_time_to_first_text_seconds_count"),
        "calls": value("chat_provider_call_seconds_count", provider="scripted", model="claude-sonnet-5"),
        "in": value("chat_tokens_total", model="claude-sonnet-5", direction="input"),
        "out": value("chat_tokens_total", model="claude-sonnet-5", direction="output"),
        "perr": value("chat_provider_errors_total", provider="scripted", code="overloaded"),
        "ws": value("chat_events_sent_total", transport="websocket"),
        "sockets": value("chat_open_sockets"),
        "cost": value("chat_cost_usd_total", model="claude-sonnet-5"),
    }
    scripted.enqueue(
        s.tool_call("calculate", {"expression": "6*7"}),
        s.text("The answer ", "is 42.", usage=s.Usage(100, 7)),
        [ProviderError("overloaded", "the model is overloaded", retryable=True)],
    )
    ws, _ = await ws_connect(user)
    assert ws is not None
    assert value("chat_open_sockets") == before["sockets"] + 1
    await ws.chat("what is 6*7?")
    first = await ws.until_terminal()
    assert first[-1]["type"] == "complete" and any(e["type"] == "tool_complete" for e in first)
    await ws.chat("again", conversation_id=first[-1]["conversation_id"])
    second = await ws.until_terminal()
    assert second[-1]["type"] == "error" and second[-1]["code"] == "overloaded"
    await ws.close()

    assert value("chat_runs_started_total", provider="scripted") == before["started"] + 2
    assert value("chat_runs_finished_total", terminal="complete", code="") == before["complete"] + 1
    assert value("chat_runs_finished_total", terminal="error", code="overloaded") == before["error"] + 1
    assert value("chat_tool_calls_total", tool="calculate", outcome="ok") == before["tool"] + 1
    assert value("chat_tool_call_seconds_count", tool="calculate") == before["tool_n"] + 1
    assert value("chat_time_to_first_event_seconds_count") == before["ttfe"] + 2
    assert value("chat_time_to_first_text_seconds_count") >= before["ttft"] + 1
    assert value("chat_provider_call_seconds_count", provider="scripted", model="claude-sonnet-5") == before["calls"] + 2
    assert value("chat_tokens_total", model="claude-sonnet-5", direction="input") == before["in"] + 110  # 10 + 100
    assert value("chat_tokens_total", model="claude-sonnet-5", direction="output") == before["out"] + 12  # 5 + 7
    assert value("chat_provider_errors_total", provider="scripted", code="overloaded") == before["perr"] + 1
    assert value("chat_events_sent_total", transport="websocket") == before["ws"] + len(first) + len(second)
    assert value("chat_open_sockets") == before["sockets"]
    price = cost_of("claude-sonnet-5", {"input_tokens": 110, "output_tokens": 12})  # the default price table's
    assert price and value("chat_cost_usd_total", model="claude-sonnet-5") == pytest.approx(before["cost"] + price)


@pytest.mark.django_db(transaction=True)
async def test_rate_limit_hits_are_counted(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1
    before = value("chat_rate_limited_total", limit="messages")
    scripted.enqueue(s.text("one"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("first")
    await ws.until_terminal()
    await ws.chat("second")
    refusal = await ws.recv()
    assert refusal["code"] == "rate_limited"
    await ws.close()
    assert value("chat_rate_limited_total", limit="messages") == before + 1


@pytest.mark.django_db
def test_metrics_endpoint_is_for_staff_or_the_token(client: Any, user: Any, staff_user: Any, settings: Any) -> None:
    settings.CHAT_METRICS_TOKEN = "s3cret-token"
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert client.get("/metrics", headers={"Authorization": "Basic czNjcmV0LXRva2Vu"}).status_code == 403
    client.force_login(user)
    assert client.get("/metrics").status_code == 403
    anonymous = client.__class__()
    ok = anonymous.get("/metrics", headers={"Authorization": "Bearer s3cret-token"})
    assert ok.status_code == 200 and ok["Content-Type"].startswith("text/plain")
    names = {f.name for f in text_string_to_metric_families(ok.content.decode())}
    assert {"chat_runs_started", "chat_runs_finished", "chat_time_to_first_event_seconds", "chat_open_sockets"} <= names
    client.force_login(staff_user)
    assert client.get("/metrics").status_code == 200
    settings.CHAT_METRICS_TOKEN = ""
    assert anonymous.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 403  # no token configured: none works


def _scrape(server: Daphne, token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, _, body = http("GET", f"{server.url}/metrics", headers={"Authorization": f"Bearer {token}"})
    assert status == 200, body[:500]
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(body.decode()) for sample in family.samples}


def test_two_processes_share_the_multiprocess_directory(start_daphne: Callable[..., Daphne], ops_dir: Path, tmp_path: Path) -> None:
    """Two daphne processes on one database and one PROMETHEUS_MULTIPROC_DIR: a turn on each (POST /api/chat), and
    either process's /metrics counts both."""
    import sqlite3

    from tests.ops.conftest import PYTHON  # noqa: F401  (the servers run this interpreter)

    prom = tmp_path / "prom"
    prom.mkdir()
    db = ops_dir / "multi.sqlite3"
    src, dst = sqlite3.connect(ops_dir / "template.sqlite3"), sqlite3.connect(db)
    src.backup(dst)
    src.close()
    dst.close()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(prom), "CHAT_METRICS_TOKEN": "multi-secret", "CHAT_OFFLINE_DELAY": "0"}
    a = start_daphne("multi-a", db=db, **env)
    b = start_daphne("multi-b", db=db, **env)
    token = token_for(db, "demo")
    before = _scrape(a, "multi-secret").get(("chat_runs_started_total", (("provider", "offline"),)), 0.0)
    for server in (a, b):
        body = json.dumps({"client_message_id": str(uuid.uuid4()), "message": "hello"}).encode()
        status, _, answer = http("POST", f"{server.url}/api/chat", body=body,
                                 headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
        assert status == 200, answer[:500]
    for server in (a, b):
        samples = _scrape(server, "multi-secret")
        assert samples[("chat_runs_started_total", (("provider", "offline"),))] == before + 2
        assert samples[("chat_runs_finished_total", (("code", ""), ("terminal", "complete")))] >= 2
        assert samples[("chat_time_to_first_event_seconds_count", ())] >= 2
    assert len(list(prom.glob("counter_*.db"))) >= 2  # each process wrote its own file
