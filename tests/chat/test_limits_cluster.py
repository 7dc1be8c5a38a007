"""From outside, on two real daphne processes sharing PostgreSQL and a redis-server: a user whose daily budget one
process used up cannot have a model call made for her through the other by regenerating (the websocket's
`replace_last`, REST, SSE, the AI SDK's `regenerate-message`) or by a new AG-UI message: each is refused with
`budget_exceeded`, `retry_after` and `Retry-After`, and the model server gets no request."""
from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.protocol import check_http, check_wire
from tests.resilience.cluster import Cluster

PROCESS_BUDGET = 50  # tokens a day: one answer of the cluster's fake model uses it up


@pytest.fixture
def cluster() -> Iterator[Cluster]:
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


async def _post(cluster: Cluster, name: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """POST as ann: the status, the headers and the body."""
    def call() -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(f"http://127.0.0.1:{cluster.ports[name]}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Token {cluster.tokens['ann']}", "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    return await asyncio.to_thread(call)


def _sdk(trigger: str) -> dict[str, Any]:
    return {"id": "t1", "trigger": trigger, "messages": [{"id": "m0", "role": "user", "parts": [{"type": "text", "text": "spend the budget"}]}]}


@pytest.mark.services
async def test_no_model_call_for_a_user_over_budget_whatever_the_path_and_process(cluster: Cluster) -> None:
    status, _, raw = await _post(cluster, "A", "/api/chat/ai-sdk", _sdk("submit-message"))
    assert status == 200
    chunks = [json.loads(line[6:]) for line in raw.decode().split("\n\n") if line.startswith("data: {")]
    complete = next(c["data"] for c in chunks if c["type"] == "data-pagechat-complete")
    conversation_id = complete["conversation_id"]
    asked = len(cluster.fake_requests())
    assert asked >= 1

    ws = await cluster.ws("B", "ann")
    await ws.send(json.dumps({"type": "chat.send", "client_message_id": "regen-ws", "conversation_id": conversation_id,
                              "message": "", "context": {}, "replace_last": "answer"}))
    refused = check_wire(await asyncio.wait_for(ws.recv(), 20))
    await ws.close()
    assert refused["type"] == "error" and "seq" not in refused and refused["code"] == "budget_exceeded", refused
    assert 1 <= refused["retry_after"] <= 86400

    regenerate = {"conversation_id": conversation_id, "message": "", "replace_last": "answer"}
    for path, body in [("/api/chat", regenerate), ("/api/chat/stream", regenerate), ("/api/chat/ai-sdk", _sdk("regenerate-message")),
                       ("/api/chat/ag-ui", {"threadId": "t1", "runId": "r2", "messages": [{"id": "u2", "role": "user", "content": "more"}],
                                            "tools": [], "context": [], "forwardedProps": {}})]:
        status, headers, raw = await _post(cluster, "B", path, body)
        error = check_http(status, raw)
        assert (status, error["code"]) == (429, "budget_exceeded"), (path, status, raw[:300])
        assert headers.get("Retry-After") == str(error["retry_after"]), (path, headers)

    assert len(cluster.fake_requests()) == asked  # not one model call for any of them
