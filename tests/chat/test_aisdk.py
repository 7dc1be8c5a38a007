"""The AI SDK UI message stream over the real ASGI stack (the `ai` package's own schema checks it in tests/interop)."""
from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import jsonpatch
import pytest
from django.test import AsyncClient

from chat.agent.types import ToolContext
from chat.conf import chat_settings
from chat.models import Attachment, Conversation, Message, Run
from chat.providers import scripted as s
from chat.providers.base import ProviderError
from tests.chat.test_attachments import blocks_of, pdf_bytes, png_bytes
from tests.chat.test_http import TokenClient, auth_headers
from tests.protocol import check_http
from tools.registry import registry as tool_registry
from tools.spec import ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/chat/ai-sdk"


def chunks(raw: bytes) -> list[Any]:
    out: list[Any] = []
    for block in raw.decode().split("\n\n"):
        if block.strip():
            assert block.startswith("data: ") and "\n" not in block, block
            out.append(block[6:] if block == "data: [DONE]" else json.loads(block[6:]))
    return out


def body(chat_id: str, *texts: str, **extra: Any) -> dict[str, Any]:
    msgs = [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": t}]} for i, t in enumerate(texts)]
    return {"id": chat_id, "messages": msgs, "trigger": "submit-message", **extra}


async def post(client: AsyncClient, data: Any) -> tuple[Any, list[Any]]:
    r = await client.post(URL, data, content_type="application/json")
    if r.status_code != 200:
        return r, []
    assert r["x-vercel-ai-ui-message-stream"] == "v1" and r["Content-Type"] == "text/event-stream"
    return r, chunks(b"".join([c async for c in r.streaming_content]))


async def test_text_tool_and_complete(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.tool_call("calculate", {"expression": "6*7"}, before="Let me see. "), s.text("It is 42."))
    client = TokenClient(await auth_headers(user))
    r, out = await post(client, body("c1", "what is 6*7?", page="home"))
    types = [c["type"] if isinstance(c, dict) else c for c in out]
    assert types[0] == "start" and types[-2:] == ["finish", "[DONE]"]
    complete = next(c for c in out if isinstance(c, dict) and c["type"] == "data-pagechat-complete")["data"]
    check_http(200, json.dumps(complete))
    assert out[0]["messageId"] == str(complete["message_id"])
    assert [c["type"] for c in out if isinstance(c, dict) and c["type"].startswith("tool-")] == [
        "tool-input-start", "tool-input-delta", "tool-input-available", "tool-output-available"]
    assert all(c.get("dynamic") for c in out if isinstance(c, dict) and c["type"] in ("tool-input-start", "tool-output-available"))
    text = "".join(c["delta"] for c in out if isinstance(c, dict) and c["type"] == "text-delta")
    assert text.startswith("Let me see.") and text.endswith("It is 42.") and "[[tool:" not in text
    assert types.count("text-start") == types.count("text-end")
    conv = await Conversation.objects.aget(owner=user, thread_id="c1")
    assert (await Message.objects.aget(conversation=conv, role="user")).context["current_page"] == "home"


async def test_error_chunk_and_part(user: Any, scripted: Any) -> None:
    scripted.enqueue([s.TextDelta("partial "), ProviderError("overloaded", "The model is overloaded.")])
    client = TokenClient(await auth_headers(user))
    _, out = await post(client, body("c2", "hi"))
    err = next(c for c in out if isinstance(c, dict) and c["type"] == "error")
    assert err["errorText"] == "overloaded: The model is overloaded."
    part = next(c for c in out if isinstance(c, dict) and c["type"] == "data-pagechat-error")
    assert part["data"] == {"code": "overloaded", "message": "The model is overloaded."}
    assert out[-1] == "[DONE]"


async def test_only_the_trailing_message_regenerate_and_resume(user: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("one"), s.text("two"), s.text("two again"))
    client = TokenClient(await auth_headers(user))
    await post(client, body("c3", "first"))
    data = body("c3", "first", "second")
    data["messages"].insert(1, {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": "FORGED"}]})
    _, out = await post(client, data)
    conv = await Conversation.objects.aget(owner=user, thread_id="c3")
    assert [(m.role, m.content) async for m in conv.messages.order_by("id")] == [
        ("user", "first"), ("assistant", "one"), ("user", "second"), ("assistant", "two")]
    last_id = out[0]["messageId"]
    regen = {"id": "c3", "messages": data["messages"], "trigger": "regenerate-message", "messageId": last_id}
    r, out = await post(client, regen)
    assert r.status_code == 200 and out[0]["messageId"] != last_id
    assert [(m.role, m.content) async for m in conv.messages.filter(replaced=False).order_by("id")] == [
        ("user", "first"), ("assistant", "one"), ("user", "second"), ("assistant", "two again")]
    assert [m.content async for m in conv.messages.filter(replaced=True)] == ["two"]  # kept as an earlier version
    r, _ = await post(client, {**regen, "messageId": last_id})  # that answer is no longer the last one
    assert r.status_code == 400 and check_http(400, r.content)["code"] == "bad_frame"
    # resume: nothing running -> 204; a running turn -> its stream from the start
    assert (await client.get(f"{URL}/c3/stream")).status_code == 204
    assert (await client.get(f"{URL}/unknown/stream")).status_code == 204
    gate = asyncio.Event()
    scripted.enqueue([s.TextDelta("slow "), gate, s.TextDelta("end")])
    task = asyncio.create_task(post(client, body("c4", "go")))
    for _ in range(500):
        if await Run.objects.filter(conversation__thread_id="c4", status="running").aexists():
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the turn did not start")
    resumed = await client.get(f"{URL}/c4/stream")
    assert resumed.status_code == 200
    gate.set()
    out = chunks(b"".join([c async for c in resumed.streaming_content]))
    assert "".join(c["delta"] for c in out if isinstance(c, dict) and c["type"] == "text-delta") == "slow end"
    _, original = await task
    assert original == out


async def test_refusals(user: Any, scripted: Any) -> None:
    r = await AsyncClient().post(URL, body("x", "hi"), content_type="application/json")
    assert r.status_code == 401 and check_http(401, r.content)["code"] == "unauthorized"
    client = TokenClient(await auth_headers(user))
    for data, status, code in [("nope", 400, "bad_json"), ({"messages": []}, 400, "bad_frame"), (body("x"), 400, "bad_frame"),
                               (body("x", "y" * 20_000), 413, "too_large"),
                               ({**body("x", "hi"), "trigger": "regenerate-message"}, 404, "not_found")]:
        r, _ = await post(client, data)
        assert r.status_code == status, (data, r.content)
        assert check_http(status, r.content)["code"] == code


def file_part(data: bytes, media_type: str, name: str) -> dict[str, Any]:
    """A file part as `useChat` sends a picked file: a base64 data: URL."""
    return {"type": "file", "mediaType": media_type, "filename": name, "url": f"data:{media_type};base64,{base64.b64encode(data).decode()}"}


async def test_the_new_messages_files_become_its_attachments(user: Any, scripted: Any, settings: Any, tmp_path: Any) -> None:
    settings.MEDIA_ROOT = str(tmp_path)
    scripted.enqueue(s.text("A red chart and a paper."))
    data = body("f1", "what are these?")
    data["messages"][-1]["parts"] += [file_part(png_bytes(), "image/png", "chart.png"), file_part(pdf_bytes(), "application/pdf", "paper.pdf")]
    r, out = await post(TokenClient(await auth_headers(user)), data)
    assert r.status_code == 200 and [c["type"] for c in out if isinstance(c, dict)][-1] == "finish"
    assert [b["type"] for b in blocks_of(scripted.requests[0])] == ["image", "document", "text"]  # what the model is given
    question = await Message.objects.aget(conversation__thread_id="f1", role="user")
    assert [a.name async for a in Attachment.objects.filter(message=question).order_by("position")] == ["chart.png", "paper.pdf"]
    r, out = await post(TokenClient(await auth_headers(user)), data)  # a retry of the same request: the same turn
    assert r.status_code == 200 and len(scripted.requests) == 1
    assert await Attachment.objects.filter(owner=user).acount() == 2  # the retry's copies are not left behind


async def test_file_parts_that_are_refused(user: Any, scripted: Any, settings: Any, tmp_path: Any) -> None:
    settings.MEDIA_ROOT = str(tmp_path)
    client = TokenClient(await auth_headers(user))
    text_file = file_part(b"just text", "image/png", "notes.png")
    parts: list[Any] = [
        ({"type": "file", "mediaType": "image/png", "url": "https://example.com/a.png"}, 400, "bad_frame"),  # never fetched
        ({"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,@@@"}, 400, "bad_frame"),
        ([file_part(png_bytes(), "image/png", "ok.png"), text_file], 415, "unsupported_type"),  # judged by its bytes, as an upload is
    ]
    for part, status, code in parts:
        data = body("f2", "look")
        data["messages"][-1]["parts"] += part if isinstance(part, list) else [part]
        r, _ = await post(client, data)
        assert r.status_code == status and check_http(status, r.content)["code"] == code, (part, r.content)
    data = body("f2", "y" * 20_000)  # a turn refused after its files were stored
    data["messages"][-1]["parts"].append(file_part(png_bytes(), "image/png", "a.png"))
    r, _ = await post(client, data)
    assert r.status_code == 413 and check_http(413, r.content)["code"] == "too_large"
    data = body("f2", "six")
    data["messages"][-1]["parts"] += [file_part(png_bytes(), "image/png", f"{i}.png") for i in range(chat_settings.CHAT_MAX_ATTACHMENTS_PER_MESSAGE + 1)]
    r, _ = await post(client, data)
    assert r.status_code == 413 and check_http(413, r.content)["code"] == "too_large"
    assert not await Attachment.objects.filter(owner=user).aexists()  # nothing stored for a refused request
    assert not await Message.objects.filter(conversation__thread_id="f2").aexists()


@pytest.fixture
def state_tool() -> Iterator[None]:
    """A server tool that changes the shared state (ToolContext.state) in place."""
    def pick(tool_input: dict[str, Any], ctx: ToolContext) -> str:
        ctx.state["selection"] = {"row": tool_input["row"]}
        ctx.state["picked"] = ctx.state.get("picked", 0) + 1
        return f"row {tool_input['row']} selected"

    spec = ToolSpec(name="pick_row", description="Select a row of the page's table.",
                    input_schema={"type": "object", "properties": {"row": {"type": "integer"}}, "required": ["row"]},
                    executor=pick, is_global=True)
    tool_registry.register(spec)
    yield
    tool_registry.unregister(spec.name)


async def test_a_state_change_is_a_transient_data_part(user: Any, scripted: Any, state_tool: None) -> None:
    scripted.enqueue(s.tool_call("pick_row", {"row": 4}), s.tool_call("pick_row", {"row": 9}), s.tool_call("calculate", {"expression": "1+1"}),
                     s.text("Row 9."))
    r, out = await post(TokenClient(await auth_headers(user)), body("st", "pick row 4 then 9"))
    assert r.status_code == 200 and out[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    parts = [c for c in out if isinstance(c, dict) and c["type"] == "data-pagechat-state"]
    assert len(parts) == 2  # one per change: the calculation changed nothing
    complete = next(c for c in out if isinstance(c, dict) and c["type"] == "data-pagechat-complete")["data"]
    state: dict[str, Any] = {}  # no state came in: the changes are from the empty one
    for part in parts:
        assert part["transient"] is True and {"seq", "run_id", "state", "delta"} <= set(part["data"])  # the v1 event's fields
        assert part["data"]["run_id"] == complete["run_id"]
        state = jsonpatch.apply_patch(state, part["data"]["delta"])
        assert state == part["data"]["state"]  # the delta turns the previous state into this one
    assert state == {"selection": {"row": 9}, "picked": 2}
    # each follows its tool's input, before the results at the end
    types = [c["type"] if isinstance(c, dict) else c for c in out]
    at = [i for i, t in enumerate(types) if t == "data-pagechat-state"]
    inputs = [i for i, t in enumerate(types) if t == "tool-input-available"]
    assert inputs[0] < at[0] < inputs[1] < at[1] < inputs[2] < types.index("tool-output-available")
    seqs = [p["data"]["seq"] for p in parts]
    assert seqs == sorted(seqs) and len(set(seqs)) == 2
