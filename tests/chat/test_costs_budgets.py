"""Cost per turn (CHAT_PRICES), the admin's sums, and per-user daily budgets on every transport."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.checks import check_chat_settings
from chat.models import Run
from chat.providers import scripted as s
from chat.providers.base import Usage
from chat.quotas.budgets import budgets, spent_in_database
from chat.quotas.costs import cost_of, price_for, total_tokens
from tests.chat.test_http import TokenClient, auth_headers, parse_sse
from tests.conftest import ws_connect
from tests.protocol import check_wire
from tests.resilience.cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]


# ---- prices --------------------------------------------------------------------------------------


def test_cost_of_uses_exact_names_then_patterns_and_never_guesses(settings: Any) -> None:
    assert cost_of("claude-sonnet-5", Usage(1_000_000, 100_000, 2_000_000, 100_000)) == pytest.approx(3.0 + 1.5 + 0.6 + 0.375)
    assert cost_of("offline", Usage(500, 500)) == 0.0
    assert cost_of("some-local-model", Usage(10, 10)) is None  # unknown is not free
    settings.CHAT_PRICES = {"qwen3:*": {"input": 0.1, "output": 0.2}, "qwen3:4b": {"input": 1, "output": 2}}
    assert price_for("qwen3:4b").input == 1.0  # the exact name wins over the pattern
    assert price_for("qwen3:8b").cache_read == 0.1  # cache prices default to the input price
    assert cost_of("qwen3:8b", {"input_tokens": 1_000_000, "output_tokens": 1_000_000}) == pytest.approx(0.3)


def test_bad_prices_are_check_errors(settings: Any) -> None:
    settings.CHAT_PRICES = {"m": {"input": -1, "output": "x", "cahce_read": 1}, "n": {"output": 1}}
    messages = [e.msg for e in check_chat_settings() if e.id == "chat.E008"]
    assert any("'input'" in m for m in messages) and any("'output'" in m for m in messages)
    assert any("cahce_read" in m for m in messages) and any("CHAT_PRICES['n']" in m for m in messages)


@pytest.mark.django_db(transaction=True)
async def test_a_turn_records_its_cost_and_cache_tokens(staff_user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_MODEL = "claude-sonnet-5"
    scripted.enqueue(s.text("cheap", usage=Usage(1000, 200, cache_read_tokens=5000, cache_write_tokens=100)))
    ws, _ = await ws_connect(staff_user)
    assert ws is not None
    await ws.chat("hi")
    events = await ws.until_terminal()
    await ws.close()
    complete = events[-1]
    assert complete["type"] == "complete"
    assert complete["payload"]["usage"] == {"input_tokens": 1000, "output_tokens": 200, "cache_read_tokens": 5000, "cache_write_tokens": 100}
    expected = (1000 * 3 + 200 * 15 + 5000 * 0.3 + 100 * 3.75) / 1_000_000
    assert complete["payload"]["diagnostics"]["cost"]["usd"] == pytest.approx(expected)
    run = await Run.objects.aget(pk=complete["run_id"])
    assert (run.cache_read_tokens, run.cache_write_tokens) == (5000, 100)
    assert run.cost_usd == Decimal(str(round(expected, 8)))


@pytest.mark.django_db(transaction=True)
def test_admin_sums_cost_per_conversation_and_per_user_and_day(admin_client: Client, django_user_model: Any) -> None:
    from chat.models import Conversation

    ann = django_user_model.objects.create_user("ann", password="x")
    bob = django_user_model.objects.create_user("bob", password="x")
    for owner, costs in ((ann, ["0.5", "0.25"]), (bob, ["2"])):
        conversation = Conversation.objects.create(owner=owner, title=f"{owner.username}'s")
        for cost in costs:
            Run.objects.create(conversation=conversation, status="completed", input_tokens=10, output_tokens=5, cost_usd=Decimal(cost))
    page = admin_client.get("/admin/pagechat/run/costs/?o=-cost").content.decode()
    assert page.index(">bob<") < page.index(">ann<")  # sorted by cost, descending
    assert "0.750000" in page and "2.000000" in page
    ascending = admin_client.get("/admin/pagechat/run/costs/?o=cost").content.decode()
    assert ascending.index(">ann<") < ascending.index(">bob<")
    listing = admin_client.get("/admin/pagechat/conversation/?o=5").content.decode()  # the cost column
    assert "0.750000" in listing and "2.000000" in listing
    runs = admin_client.get("/admin/pagechat/run/?o=-7").content.decode()
    assert runs.count("0.250000") == 1 and admin_client.get("/admin/pagechat/run/costs/?o=nonsense").status_code == 200


# ---- budgets -------------------------------------------------------------------------------------


async def _spend_one_turn(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("spent", usage=Usage(60, 40)))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("use some tokens")
    assert (await ws.until_terminal())[-1]["type"] == "complete"
    await ws.close()


@pytest.mark.django_db(transaction=True)
async def test_an_over_budget_user_gets_budget_exceeded_on_websocket_sse_and_rest(
        user: Any, other_user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_DAILY_TOKEN_BUDGET = 100
    await _spend_one_turn(user, scripted)  # 100 tokens: the budget is used up
    assert (await sync_to_async(spent_in_database)(user_id=user.pk)).tokens == 100

    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("one more")
    refused = await ws.recv()
    assert refused["type"] == "error" and refused["code"] == "budget_exceeded"
    assert "100 tokens" in refused["message"] and "midnight UTC" in refused["message"]
    await ws.close()

    client = TokenClient(await auth_headers(user))
    rest = await client.post("/api/chat", {"client_message_id": "b-rest", "message": "more"}, content_type="application/json")
    assert rest.status_code == 429 and rest.json()["code"] == "budget_exceeded"
    sse = await client.post("/api/chat/stream", {"client_message_id": "b-sse", "message": "more"}, content_type="application/json")
    events = parse_sse([chunk async for chunk in sse.streaming_content]) if sse.status_code == 200 else []
    code = events[-1][1]["code"] if events else sse.json()["code"]
    assert code == "budget_exceeded"
    assert scripted.requests and len(scripted.requests) == 1  # no model call for a refused message

    await _spend_one_turn(other_user, scripted)  # budgets are per user


@pytest.mark.django_db(transaction=True)
async def test_a_cost_budget_counts_dollars(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_MODEL = "claude-sonnet-5"
    settings.CHAT_DAILY_COST_BUDGET = 0.0005
    await _spend_one_turn(user, scripted)  # 60*3 + 40*15 = 780 micro-dollars > 500
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("again")
    refused = await ws.recv()
    assert refused["code"] == "budget_exceeded" and "$0.00" in refused["message"]
    await ws.close()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
async def test_budgets_are_shared_across_processes_through_redis(user: Any, scripted: Any, settings: Any) -> None:
    """Another process records the user's spending in Redis; this process refuses the next message."""
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("needs REDIS_URL")
    settings.CHAT_REDIS_URL = redis_url
    settings.CHAT_DAILY_TOKEN_BUDGET = 1000
    import redis

    redis.Redis.from_url(redis_url).delete(budgets.key(user.pk))
    scripted.enqueue(s.text("fine"))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("before")
    assert (await ws.until_terminal())[-1]["type"] == "complete"  # 11 tokens, recorded in Redis
    assert int(redis.Redis.from_url(redis_url).hget(budgets.key(user.pk), "tokens") or 0) == 11

    code = ("import asyncio, django; django.setup()\n"
            "from chat.quotas.budgets import budgets\n"
            f"asyncio.run(budgets.spend({user.pk}, {{'input_tokens': 900, 'output_tokens': 100}}, 0.01))\n")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": redis_url, "CHAT_DAILY_TOKEN_BUDGET": "1000"}
    result = await sync_to_async(subprocess.run)([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr

    await ws.chat("after")
    refused = await ws.recv()
    assert refused["code"] == "budget_exceeded"
    await ws.close()
    redis.Redis.from_url(redis_url).delete(budgets.key(user.pk))


PROCESS_BUDGET = 50  # tokens a day: one answer of the cluster's fake model (40 streamed tokens) uses it up


@pytest.fixture
def two_processes() -> Iterator[Cluster]:
    """Two daphne processes, A and B, on one PostgreSQL database and one redis-server, with a daily token budget."""
    cluster = Cluster(daphne_env={"CHAT_DAILY_TOKEN_BUDGET": str(PROCESS_BUDGET)})
    try:
        cluster.start()
        for name in ("A", "B"):
            cluster.start_daphne(name)
        yield cluster
    except BaseException:
        for name in cluster.procs:
            print(f"---- {name} ----\n{cluster.log_tail(name)}")
        raise
    finally:
        cluster.close()


async def _ws_frames(ws: Any, *, until: tuple[str, ...], timeout: float = 20) -> list[dict[str, Any]]:
    """Frames (each validated against the protocol schema) up to the first whose type is in `until`."""
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1]["type"] not in until:
        frames.append(check_wire(await asyncio.wait_for(ws.recv(), timeout)))
    return frames


@pytest.mark.services
async def test_a_budget_spent_through_one_process_is_refused_by_another_on_every_transport(two_processes: Cluster) -> None:
    """ann's turn through process A uses up her budget (recorded in the shared Redis); process B then refuses her
    next message with `budget_exceeded` on the websocket, SSE and REST, starts no model call for it, and still
    serves bob."""
    cluster = two_processes
    import redis

    def send(cmid: str, message: str) -> str:
        return json.dumps({"type": "chat.send", "client_message_id": cmid, "conversation_id": None, "message": message, "context": {}})

    ws = await cluster.ws("A", "ann")
    await ws.send(send("spend", "spend the budget"))
    frames = await _ws_frames(ws, until=("complete", "error", "cancelled"))
    await ws.close()
    assert frames[-1]["type"] == "complete", frames[-1]
    spent = total_tokens(frames[-1]["payload"]["usage"])
    assert spent >= PROCESS_BUDGET
    shared = redis.Redis(port=cluster.redis_port, decode_responses=True)
    # A recorded it in Redis: the turn's tokens, and (once it is made, after the answer) its title's call's too
    assert int(shared.hget(budgets.key(cluster.user_ids["ann"]), "tokens") or 0) >= spent

    ws = await cluster.ws("B", "ann")
    await ws.send(send("refused-ws", "refused on the websocket"))
    frames = await _ws_frames(ws, until=("error", "complete"))
    await ws.close()
    refused = frames[-1]
    assert refused["type"] == "error" and refused["code"] == "budget_exceeded", refused
    assert f"{PROCESS_BUDGET} tokens" in refused["message"] and "midnight UTC" in refused["message"]
    assert not any("seq" in frame for frame in frames)  # no run started: no run event at all

    body = {"client_message_id": "refused-sse", "message": "refused on SSE"}
    status, raw = await cluster.http("B", "POST", "/api/chat/stream", "ann", body)  # error bodies checked in http()
    assert (status, json.loads(raw)["code"]) == (429, "budget_exceeded")
    body = {"client_message_id": "refused-rest", "message": "refused on REST"}
    status, raw = await cluster.http("B", "POST", "/api/chat", "ann", body)
    assert (status, json.loads(raw)["code"]) == (429, "budget_exceeded")

    status, raw = await cluster.http("B", "POST", "/api/chat", "bob", {"client_message_id": "bob-1", "message": "hello"})
    assert status == 200 and json.loads(raw)["message"].strip()  # budgets are per user; B serves
    asked = json.dumps([request["body"] for request in cluster.fake_requests()])
    assert "spend the budget" in asked and "refused on" not in asked  # no model call for a refused message


def test_every_redis_key_carries_the_sites_prefix(settings: Any) -> None:
    """Two sites (or two test runs) sharing one Redis never read each other's budgets, limits or run logs."""
    from chat.conf import chat_settings
    from chat.quotas.limits import limiter
    from chat.runs.log import RedisRunLog

    settings.CHAT_REDIS_KEY_PREFIX = "site2:"
    settings.CHAT_REDIS_URL = "redis://127.0.0.1:1/0"  # never contacted: keys only
    assert budgets.key(5, "20260101") == "site2:budget:5:20260101"
    assert limiter._socket_key(5) == "site2:sockets:5"
    log = RedisRunLog.from_settings(chat_settings)
    assert (log.key("r1"), log.cancel_key("r1")) == ("site2:run:r1", "site2:cancel:r1")
