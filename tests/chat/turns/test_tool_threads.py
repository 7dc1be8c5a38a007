"""A blocking tool runs in the tool pool: other users' handshakes and database access go on meanwhile."""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from chat.models import ToolCall
from chat.providers import scripted as s
from tests.conftest import ws_connect
from tools.registry import registry as tool_registry
from tools.spec import ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slow_tool() -> Any:
    started, release = threading.Event(), threading.Event()

    def slow(tool_input: dict[str, Any], ctx: Any) -> str:
        from django.contrib.auth import get_user_model

        started.set()
        release.wait(10)
        return f"{get_user_model().objects.count()} users"  # the ORM works in the pool's thread

    tool_registry.register(ToolSpec(name="slow_report", description="A report that takes a while.",
                                    input_schema={"type": "object", "properties": {}}, executor=slow, is_global=True))
    yield started, release
    release.set()
    tool_registry.unregister("slow_report")


async def test_a_slow_tool_does_not_hold_up_another_users_handshake(user: Any, other_user: Any, scripted: Any,
                                                                   slow_tool: Any) -> None:
    started, release = slow_tool
    scripted.enqueue(s.tool_call("slow_report", {}, tool_id="toolu_slow"), s.text("Done."))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("report please")
    assert await asyncio.to_thread(started.wait, 5)
    began = time.monotonic()
    other, _ = await ws_connect(other_user)  # token lookup and auth: the async ORM, i.e. Django's sync thread
    assert other is not None
    assert time.monotonic() - began < 3, "the handshake waited for another user's tool"
    release.set()
    frames = await ws.until_terminal()
    assert frames[-1]["type"] == "complete"
    tool = await ToolCall.objects.aget(name="slow_report")
    assert tool.status == "ok" and "2 users" in tool.output
    await other.close()
    await ws.close()


async def test_a_tool_running_when_the_user_stops_is_recorded_interrupted_and_never_run_again(
        user: Any, scripted: Any, slow_tool: Any) -> None:
    from chat.turns.persistence import TOOL_INTERRUPTED

    started, release = slow_tool
    scripted.enqueue(s.tool_call("slow_report", {}, tool_id="toolu_stop"), s.text("Never reached."))
    ws, _ = await ws_connect(user)
    assert ws is not None
    await ws.chat("report please")
    assert await asyncio.to_thread(started.wait, 5)
    tool = await ToolCall.objects.aget(tool_use_id="toolu_stop")
    assert tool.status == "started"  # recorded before it ran
    await ws.send({"type": "chat.cancel", "run_id": str(tool.run_id)})
    frames = await ws.until_terminal()
    assert frames[-1]["type"] == "cancelled"
    release.set()
    await tool.arefresh_from_db()
    assert (tool.status, tool.error) == ("interrupted", TOOL_INTERRUPTED)
    await ws.close()
