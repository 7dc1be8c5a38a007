"""The demo's MCP server (pages/demo/mcp_server.py): demo_setup registers it; its corpus tools answer in a turn."""
from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command

from chat.providers import scripted as s
from pages.demo.data import read_corpus
from tests.conftest import ws_connect
from tests.tools.test_mcp import free_port, output, run_turn, wait_for_port
from tools.mcp import mcp_tools_register
from tools.mcp_client import McpServerConfig, mcp_tool_call, mcp_tools_list
from tools.models import McpServer, Tool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(settings: Any) -> Any:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.DEBUG = True
    out = io.StringIO()
    call_command("demo_setup", stdout=out)
    yield out.getvalue()
    McpServer.objects.all().delete()
    mcp_tools_register()


async def test_demo_setup_registers_the_corpus_server_and_a_turn_searches_through_it(demo: str, user: Any, scripted: Any) -> None:
    assert "MCP server corpus: corpus__search_articles, corpus__get_article" in demo
    server = await McpServer.objects.aget(name="corpus")
    assert (server.transport, server.args, server.pages, server.require_approval) == ("stdio", ["-m", "pages.demo.mcp_server"], ["streams_list"], True)
    assert await Tool.objects.filter(module="mcp:corpus").acount() == 2
    scripted.enqueue(s.tool_call("corpus__search_articles", {"query": "osimertinib resistance", "limit": 3}), s.text("found"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws, page="streams_list")
    assert "corpus__search_articles" in {t["name"] for t in scripted.requests[0].tools}
    assert "tool_approval" in [e["type"] for e in events]
    assert [e["message"] for e in events if e["type"] == "tool_progress"] == ["Searching 363 articles", "48 articles match", "Done"]
    first = output(events).splitlines()[0]
    assert first.startswith("[35002498] Efficacy and safety of osimertinib")
    await ws.close()
    await database_sync_to_async(call_command)("demo_setup", stdout=io.StringIO())  # idempotent
    assert await McpServer.objects.filter(name="corpus").acount() == 1


async def test_the_corpus_server_over_streamable_http(settings: Any) -> None:
    settings.CHAT_MCP_ALLOWED_NETWORKS = "127.0.0.1/32"  # a server on this machine: refused unless allowed
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pages.demo.mcp_server", "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await database_sync_to_async(wait_for_port)(port, proc)
        config = McpServerConfig(name="corpus", transport="http", url=f"http://127.0.0.1:{port}/mcp", timeout=20)
        assert [t["name"] for t in await mcp_tools_list(config)] == ["search_articles", "get_article"]
        article = read_corpus()[0]
        items = [item async for item in mcp_tool_call(config, "get_article", {"external_id": article["external_id"]})]
        assert items[-1].text.startswith(article["title"]) and article["abstract"] in items[-1].text and not items[-1].is_error
    finally:
        proc.terminate()
        proc.wait(5)
