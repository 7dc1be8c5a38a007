"""Bad input and abuse: limits answered with rate_limited, logout closes sockets, cross-site sockets
refused, someone else's ids look missing, CSP on pages, and fuzzed frames (hypothesis)."""
from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from chat.events import FrameError, parse_frame
from chat.models import Message, Run
from chat.providers import scripted as s
from tests.conftest import token_for, ws_connect
from tests.protocol import check_wire
from tests.resilience.invariants import FIGURES, assert_no_foreign_bytes

pytestmark = pytest.mark.django_db(transaction=True)


async def next_frame_error(ws: Any) -> dict[str, Any]:
    while True:
        ev = await ws.recv()
        if ev["type"] == "error" and "seq" not in ev:
            return ev


# ---- limits ----------------------------------------------------------------------------------------


async def test_message_rate_limit(user: Any, other_user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 2
    scripted.enqueue(s.text("one"), s.text("two"), s.text("bob's"))
    ws, _ = await ws_connect(user)
    for i in range(2):
        await ws.chat(f"m{i}")
        assert (await ws.until_terminal())[-1]["type"] == "complete"
    await ws.chat("one too many")
    err = await ws.recv()
    assert err == {"type": "error", "code": "rate_limited", "message": err["message"], "retry_after": err["retry_after"]}
    assert 1 <= err["retry_after"] <= 60  # when the oldest of the two leaves the last 60 s
    assert await Message.objects.filter(role="user").acount() == 2  # nothing stored for the refusal
    bob, _ = await ws_connect(other_user)  # other users are unaffected
    await bob.chat("hi")
    assert (await bob.until_terminal())[-1]["type"] == "complete"
    await ws.send({"type": "chat.resume", "run_id": str(uuid.uuid4()), "after_seq": 0})  # the socket is still open
    assert (await ws.recv())["code"] == "not_found"
    await ws.close()
    await bob.close()


async def test_open_socket_limit(user: Any, other_user: Any, settings: Any) -> None:
    settings.CHAT_MAX_SOCKETS_PER_USER = 2
    first, _ = await ws_connect(user)
    second, _ = await ws_connect(user)
    third, _ = await ws_connect(user)
    assert first and second and third
    err = await third.recv()
    assert err["type"] == "error" and err["code"] == "rate_limited"
    closed = await third.comm.receive_output(timeout=2)
    assert closed["type"] == "websocket.close" and closed["code"] == 4429
    bob, _ = await ws_connect(other_user)
    await bob.send({"type": "chat.resume", "run_id": str(uuid.uuid4()), "after_seq": 0})
    assert (await bob.recv())["code"] == "not_found"
    await first.close()
    again, _ = await ws_connect(user)  # a closed socket frees its place
    await again.send({"type": "chat.resume", "run_id": str(uuid.uuid4()), "after_seq": 0})
    assert (await again.recv())["code"] == "not_found"
    for ws in (second, again, bob):
        await ws.close()


async def test_running_runs_limit(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_MAX_RUNNING_PER_USER = 2
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("a"), gate], [s.TextDelta("b"), gate], s.text("c"))
    ws, _ = await ws_connect(user)
    await ws.chat("first")
    await ws.chat("second")
    await ws.chat("third")
    err = await next_frame_error(ws)
    assert err["code"] == "rate_limited"
    gate.set()
    await asyncio.sleep(0.3)
    assert await Run.objects.acount() == 2 and await Message.objects.filter(role="user").acount() == 2
    await ws.chat("now there is room")
    while (ev := await ws.recv()).get("type") != "complete" or "now" in str(ev):
        if ev.get("type") == "complete" and ev["payload"]["message"] == "c":
            break
    await ws.close()


# ---- sessions, origins, CSP ---------------------------------------------------------------------------


async def test_logout_closes_the_sessions_sockets(staff_user: Any) -> None:
    user = staff_user  # the admin's logout view is for staff; any view calling auth.logout() does the same
    client = AsyncClient()
    await database_sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    ws, _ = await ws_connect(None, headers=[(b"cookie", cookie), (b"origin", b"http://testserver")])
    token_ws, _ = await ws_connect(user)  # a program's token socket is not part of the session
    assert ws is not None and token_ws is not None
    response = await client.post("/admin/logout/")
    assert response.status_code in (200, 302)
    closed = await ws.comm.receive_output(timeout=3)
    assert closed["type"] == "websocket.close" and closed["code"] == 4401
    again, _ = await ws_connect(None, headers=[(b"cookie", cookie), (b"origin", b"http://testserver")])
    assert again is None  # the session is gone
    await token_ws.send({"type": "chat.resume", "run_id": str(uuid.uuid4()), "after_seq": 0})
    assert (await token_ws.recv())["code"] == "not_found"
    await token_ws.close()


@pytest.mark.parametrize("origin", [b"http://evil.example", b"https://testserver.evil.example", b"null", b"", None,
                                    b"file://", b"http://testserver@evil.example", b"javascript:alert(1)"])
async def test_cross_site_cookie_sockets_are_refused(user: Any, origin: bytes | None) -> None:
    client = AsyncClient()
    await database_sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    headers = [(b"cookie", cookie)] + ([(b"origin", origin)] if origin is not None else [])
    ws, _ = await ws_connect(None, headers=headers)
    assert ws is None


def test_csp_on_html_pages(client: Any) -> None:  # the sync client: not inside an event loop
    response = client.get("/admin/login/")
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "object-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]


# ---- someone else's ids -----------------------------------------------------------------------------


async def test_someone_elses_ids_get_the_answer_a_missing_id_gets(user: Any, other_user: Any, scripted: Any, charge_like_tool: Any) -> None:
    secret = "BOB-SECRET-" + uuid.uuid4().hex
    # the scripted model answers calls in order: bob's tool call, then ann's turn, then bob's after approval
    scripted.enqueue(s.tool_call("approve_me", {"note": secret}, tool_id="toolu_bob", before=secret), s.text("ann's own answer"), s.text(secret))
    bob, _ = await ws_connect(other_user)
    await bob.chat(secret)
    while (ev := await bob.recv())["type"] != "tool_approval":
        pass
    run_id, conv = ev["run_id"], ev["conversation_id"]
    bob_msg = await Message.objects.filter(conversation_id=conv, role="user").afirst()
    ann, _ = await ws_connect(user)
    received: list[Any] = []
    missing_run, missing_conv = str(uuid.uuid4()), 10**9
    probes = [
        ({"type": "chat.send", "client_message_id": "x1", "conversation_id": conv, "message": "in"}, {"conversation_id": missing_conv}),
        ({"type": "chat.resume", "run_id": run_id, "after_seq": 0}, {"run_id": missing_run}),
        ({"type": "chat.cancel", "run_id": run_id}, {"run_id": missing_run}),
        ({"type": "chat.approve", "run_id": run_id, "tool_use_id": "toolu_bob", "approved": True}, {"run_id": missing_run}),
        ({"type": "chat.send", "client_message_id": "x2", "conversation_id": 2**63 + 5, "message": "in"}, {"conversation_id": missing_conv}),
    ]
    for frame, missing in probes:
        await ann.send(frame)
        theirs = await ann.recv()
        await ann.send({**frame, **missing})
        absent = await ann.recv()
        received += [theirs, absent]
        theirs.pop("run_id", None), absent.pop("run_id", None)  # the refusal echoes the id the client sent
        assert theirs == absent, (frame, theirs, absent)
        assert theirs["code"] == "not_found"
    # bob's client_message_id is not a way into bob's run either: it is a new message of ann's
    await ann.send({"type": "chat.send", "client_message_id": bob_msg.client_message_id, "conversation_id": None, "message": "mine"})
    received += await ann.until_terminal()
    assert received[-1]["payload"]["message"] == "ann's own answer"
    token = await database_sync_to_async(token_for)(user)
    http = AsyncClient()
    h = {"Authorization": f"Token {token}"}
    for url, method in [(f"/api/conversations/{conv}/", "get"), (f"/api/chat/runs/{run_id}/events", "get"),
                        (f"/api/chat/runs/{run_id}/cancel", "post"), (f"/api/conversations/{10**30}/", "get"),
                        (f"/api/chat/runs/{run_id}/approve", "post")]:
        r = await getattr(http, method)(url, headers=h, **({"data": {"tool_use_id": "toolu_bob", "approved": True}, "content_type": "application/json"} if "approve" in url else {}))
        assert r.status_code == 404, (url, r.status_code)
        received.append(r.content)
    listing = await http.get("/api/conversations/", headers=h)
    received.append(listing.content)
    assert_no_foreign_bytes(received, [secret])
    # bob's run is untouched: still waiting for bob's approval
    assert (await Run.objects.aget(pk=run_id)).status == "running"
    await bob.send({"type": "chat.approve", "run_id": run_id, "tool_use_id": "toolu_bob", "approved": False})
    assert (await bob.until_terminal())[-1]["type"] == "complete"
    FIGURES.trial("foreign_ids")
    await ann.close()
    await bob.close()


@pytest.fixture
def charge_like_tool() -> Any:
    from tools.registry import registry as tool_registry
    from tools.spec import ToolSpec

    spec = ToolSpec(name="approve_me", description="Needs the user's approval.", input_schema={"type": "object", "properties": {"note": {"type": "string"}}},
                    executor=lambda tool_input, ctx: "approved", is_global=True, requires_approval=True)
    tool_registry.register(spec)
    yield spec
    tool_registry.unregister("approve_me")


# ---- fuzzing ----------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
frame_types = st.sampled_from(["chat.send", "chat.cancel", "chat.resume", "chat.approve", "chat.tool_result", "websocket.disconnect",
                               "session.logout", "run.cancel", "chat_send", "", "CHAT.SEND"])
frame_like = st.fixed_dictionaries(
    {"type": frame_types},
    optional={
        "client_message_id": st.text(max_size=70) | json_values, "conversation_id": st.integers() | json_values,
        "message": st.text(max_size=50) | json_values, "context": json_values, "run_id": st.text(max_size=70) | json_values,
        "after_seq": st.integers() | json_values, "tool_use_id": st.text(max_size=10), "approved": json_values,
        "interaction_type": st.sampled_from(["text_input", "action_executed", "nope"]),
        "action_metadata": json_values, "conversation_history": json_values,
        "tab_id": st.text(max_size=70) | json_values, "client_tools": json_values | st.lists(st.fixed_dictionaries(
            {"name": st.text(max_size=70)}, optional={"parameters": json_values, "requires_approval": json_values}), max_size=20),
        "state": json_values, "output": st.text(max_size=30) | json_values, "is_error": json_values, "payload": json_values,
    },
)


def _nested(depth: int) -> str:
    return '{"type":"chat.send","client_message_id":"n","message":"x","context":' + '{"a":' * depth + "1" + "}" * depth + "}"


raw_frames = (
    st.text(max_size=200)
    | json_values.map(json.dumps)
    | frame_like.map(lambda d: json.dumps(d))
    | st.integers(min_value=30, max_value=3000).map(_nested)
    | st.sampled_from(['{"type":"chat.send","client_message_id":"a","message":"\\ud800"}', '"\\u0000"',
                       '{"type":"chat.send","client_message_id":"a","message":"nul\\u0000"}', "[" * 100_000,
                       '{"type":"chat.resume","run_id":"x","after_seq":1e999}'])
)


@hsettings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw_frames)
def test_parse_frame_never_raises_and_its_errors_can_be_sent(text: str) -> None:
    result = parse_frame(text, 64 * 1024)
    if isinstance(result, FrameError):
        wire = result.model_dump_json(exclude_none=True)
        wire.encode("utf-8")  # a refusal can always be sent back
        assert json.loads(wire)["code"] in ("bad_json", "bad_frame", "unknown_type", "too_large")
    else:
        result.model_dump_json().encode("utf-8")  # an accepted frame holds nothing that cannot be stored or echoed
    FIGURES.add(events_checked=1)


class _SocketThread:
    """One websocket kept open on its own event loop, driven from hypothesis' synchronous examples."""

    def __init__(self, user: Any):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ws, _ = self.call(ws_connect(user))
        assert self.ws is not None

    def call(self, coro: Any, timeout: float = 10) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        try:
            self.call(self.ws.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


@pytest.fixture
def fuzz_socket(user: Any, settings: Any) -> Any:
    settings.CHAT_PROVIDER = "chat.providers.offline.OfflineProvider"
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 100_000
    sock = _SocketThread(user)
    yield sock
    sock.close()


async def _drain(ws: Any, quiet: float = 0.05) -> list[dict[str, Any]]:
    """Frames sent until none came for `quiet` s (reading the queue: a receive timeout would kill the app)."""
    out: list[dict[str, Any]] = []
    queue = ws.comm.output_queue
    idle, waited = 0.0, 0.0
    while idle < quiet or (not out and waited < 5):  # every frame is answered: wait for the first answer
        await asyncio.sleep(0.01)
        waited += 0.01
        if queue.empty():
            idle += 0.01
            continue
        idle = 0.0
        while not queue.empty():
            message = queue.get_nowait()
            assert message["type"] == "websocket.send", message  # never closed
            out.append(check_wire(message["text"]))
    return out


def test_fuzzed_frames_through_the_consumer(fuzz_socket: Any, user: Any) -> None:
    """Never a crash, the socket stays open, refused frames store nothing, every answer is JSON."""
    counts = {"frames": 0, "refused": 0, "accepted": 0}

    @hsettings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
    @given(raw_frames)
    def one(text: str) -> None:
        before = Message.objects.count()
        parsed = parse_frame(text, 64 * 1024)
        fuzz_socket.call(fuzz_socket.ws.comm.send_input({"type": "websocket.receive", "text": text}))
        answers = fuzz_socket.call(_drain(fuzz_socket.ws, 0.3 if not isinstance(parsed, FrameError) else 0.05))
        counts["frames"] += 1
        if isinstance(parsed, FrameError):
            counts["refused"] += 1
            # events of an earlier accepted frame's run may still trail in: the refusal is the frame-level answer
            refusals = [a for a in answers if "seq" not in a]
            assert refusals and refusals[0]["type"] == "error" and refusals[0]["code"] == parsed.code, answers
            assert Message.objects.count() == before
        else:
            counts["accepted"] += 1
            assert all(a.get("code") != "internal" for a in answers), answers

    one()
    # still open and working after all of it
    fuzz_socket.call(fuzz_socket.ws.chat("hello after the fuzz"))
    events = fuzz_socket.call(fuzz_socket.ws.until_terminal())
    assert events[-1]["type"] == "complete"
    FIGURES.trial("consumer_fuzz_frames", counts["frames"])
    print(f"fuzzed frames through the consumer: {counts}")
