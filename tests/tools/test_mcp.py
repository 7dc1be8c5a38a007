"""MCP tool servers through the real `mcp` SDK: a real server process (tests/tools/mcp_server_app.py, the SDK's
MCPServer) over stdio and over streamable HTTP on a free localhost port, called in turns over the real websocket."""
from __future__ import annotations

import hashlib
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group

from chat.models import Run, ToolCall
from chat.providers import scripted as s
from pages.registry import PageSpec, registry as pages
from tests.conftest import ws_connect
from tools.mcp import mcp_server_refresh, mcp_tools_register, tool_name
from tools.mcp_client import CLEANUP_GRACE
from tools.models import McpServer, Tool
from tools.registry import registry as tools

pytestmark = pytest.mark.django_db(transaction=True)
SERVER_APP = Path(__file__).with_name("mcp_server_app.py")
SECRET = "s3cret-Value-never-stored"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the MCP test server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the MCP test server did not listen in time")


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The test server as its own process, serving streamable HTTP on a free localhost port."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER_APP), "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(autouse=True)
def local_servers_allowed(settings: Any) -> None:
    """The test server listens on this machine's loopback address, which MCP servers may only be at when allowed."""
    settings.CHAT_MCP_ALLOWED_NETWORKS = "127.0.0.1/32"


@pytest.fixture(autouse=True)
def mcp_pages(transactional_db: Any) -> Iterator[None]:
    """Two pages; afterwards no server row and none of their tools left in the registry."""
    pages.register(PageSpec(name="m_page", identity="MCP test page."))
    pages.register(PageSpec(name="m_other", identity="Another page."))
    yield
    McpServer.objects.all().delete()
    mcp_tools_register()
    pages.unregister("m_page")
    pages.unregister("m_other")


def make_server(transport: str, http_url: str = "", **fields: Any) -> McpServer:
    """A server row for the test server over `transport`, its tools listed (as saving it in the admin does)."""
    fields.setdefault("name", "t")
    fields.setdefault("pages", ["m_page"])
    if transport == "stdio":
        fields.update(transport="stdio", command=sys.executable, args=[str(SERVER_APP)])
    else:
        fields.update(transport="http", url=http_url)
    server = McpServer.objects.create(**fields)
    outcome = mcp_server_refresh(server=server)
    assert outcome.error == "", outcome.error
    return server


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest, http_url: str) -> tuple[str, str]:
    return request.param, http_url


async def run_turn(ws: Any, page: str = "m_page", approve: bool | None = True, conversation_id: int | None = None,
                   timeout: float = 30) -> list[dict[str, Any]]:
    """One turn; answers each approval request with `approve` (None: leaves the first one unanswered)."""
    await ws.chat("go", context={"current_page": page}, **({"conversation_id": conversation_id} if conversation_id else {}))
    events = []
    while True:
        ev = await ws.recv(timeout)
        events.append(ev)
        if ev["type"] == "tool_approval" and approve is not None:
            await ws.send({"type": "chat.approve", "run_id": ev["run_id"], "tool_use_id": ev["tool_use_id"], "approved": approve})
        if ev["type"] in ("complete", "cancelled") or (ev["type"] == "error" and "seq" in ev):
            return events


def offered(request: Any) -> set[str]:
    return {t["name"] for t in request.tools}


def output(events: list[dict[str, Any]]) -> str:
    return str(events[-1]["payload"]["tool_history"][0]["output"])


# ---- listing --------------------------------------------------------------------------------------


def test_listing_puts_the_servers_tools_in_the_registry_and_its_orm_mirror(transport: tuple[str, str]) -> None:
    server = make_server(*transport)
    assert [t["name"] for t in server.tools] == ["count", "sleep", "whoami", "fail", "wipe"]
    assert server.tools_refreshed_at is not None
    mcp_tools_register()
    spec = tools.get("t__count")
    assert spec is not None and spec.requires_approval and spec.mcp_server == "t" and not spec.is_global
    assert spec.input_schema["properties"]["n"]["type"] == "integer" and "Count to n" in spec.description
    assert tools.get("t__wipe").changes_data  # the server marks it destructive: approval always
    rows = {r.name: r for r in Tool.objects.filter(module="mcp:t")}
    assert set(rows) == {"t__count", "t__sleep", "t__whoami", "t__fail", "t__wipe"}
    assert all(r.requires_approval and r.registered for r in rows.values())


def test_tool_names_fit_what_providers_accept() -> None:
    assert tool_name("srv", "get.item/v2") == "srv__get_item_v2"
    assert len(tool_name("s" * 40, "x" * 60)) == 64


async def test_a_disabled_or_deleted_server_leaves_the_registry_on_the_next_turn(user: Any, scripted: Any, http_url: str) -> None:
    server = await database_sync_to_async(make_server)("http", http_url)
    ws, _ = await ws_connect(user)
    scripted.enqueue(s.text("1"), s.text("2"), s.text("3"), s.text("4"))
    conv = (await run_turn(ws))[-1]["conversation_id"]
    assert {"t__count", "t__whoami"} <= offered(scripted.requests[-1])
    await run_turn(ws, page="m_other", conversation_id=conv)  # only on the pages staff chose
    assert not any(name.startswith("t__") for name in offered(scripted.requests[-1]))
    server.enabled = False
    await server.asave()
    await run_turn(ws, conversation_id=conv)
    assert not any(name.startswith("t__") for name in offered(scripted.requests[-1])) and "t__count" not in tools
    server.enabled, server.on_every_page, server.pages = True, True, []
    await server.asave()
    await run_turn(ws, page="m_other", conversation_id=conv)
    assert "t__count" in offered(scripted.requests[-1])
    await ws.close()


# ---- calls in a turn ------------------------------------------------------------------------------


async def test_a_call_asks_approval_then_streams_progress_as_tool_progress(user: Any, scripted: Any, transport: tuple[str, str]) -> None:
    await database_sync_to_async(make_server)(*transport)
    scripted.enqueue(s.tool_call("t__count", {"n": 3}), s.text("counted"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws)
    kinds = [e["type"] for e in events]
    assert kinds.index("tool_approval") < kinds.index("tool_progress")  # approval by default, before it runs
    progress = [e for e in events if e["type"] == "tool_progress"]
    assert [(p["tool"], p["message"], p["progress"]) for p in progress] == [
        ("t__count", "counted 1", pytest.approx(1 / 3)), ("t__count", "counted 2", pytest.approx(2 / 3)), ("t__count", "counted 3", 1.0)]
    assert events[-1]["type"] == "complete" and output(events) == "counted to 3"
    call = await ToolCall.objects.aget(name="t__count")
    assert call.status == ToolCall.Status.OK
    # what the model got back is the tool's text, marked as data
    result = scripted.requests[1].messages[-1]["content"][0]
    assert "counted to 3" in result["content"] and not result.get("is_error")
    await ws.close()


async def test_a_refused_approval_never_calls_the_server(user: Any, scripted: Any, http_url: str) -> None:
    await database_sync_to_async(make_server)("http", http_url)
    scripted.enqueue(s.tool_call("t__count", {"n": 2}), s.text("ok"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws, approve=False)
    assert "did not approve" in output(events) and not [e for e in events if e["type"] == "tool_progress"]
    await ws.close()


async def test_without_approval_the_tool_runs_directly_and_a_tool_error_is_clear(user: Any, scripted: Any, http_url: str) -> None:
    await database_sync_to_async(make_server)("http", http_url, require_approval=False)
    scripted.enqueue(s.tool_call("t__fail", {}), s.text("it failed"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws, approve=None)
    assert "tool_approval" not in [e["type"] for e in events]
    assert events[-1]["type"] == "complete"
    assert output(events).startswith("Error: the tool of MCP server 't' reported:")
    assert (await ToolCall.objects.aget(name="t__fail")).status == ToolCall.Status.ERROR
    await ws.close()


async def test_a_slow_server_times_out_with_a_clear_error_and_the_run_completes(user: Any, scripted: Any, transport: tuple[str, str]) -> None:
    server = await database_sync_to_async(make_server)(*transport, require_approval=False)
    server.timeout = 5.0
    await server.asave()
    scripted.enqueue(s.tool_call("t__sleep", {"seconds": 120}), s.text("too slow"))
    ws, _ = await ws_connect(user)
    started = time.monotonic()
    events = await run_turn(ws, approve=None, timeout=5 + CLEANUP_GRACE + 10)
    assert time.monotonic() - started < 5 + CLEANUP_GRACE + 5
    assert events[-1]["type"] == "complete"
    assert output(events) == "Error: MCP server 't' did not answer within 5 s; the call was stopped."
    await ws.close()


async def test_cancelling_the_run_stops_a_call_under_way(user: Any, scripted: Any, http_url: str) -> None:
    await database_sync_to_async(make_server)("http", http_url, require_approval=False)
    scripted.enqueue(s.tool_call("t__sleep", {"seconds": 120}), s.text("never"))
    ws, _ = await ws_connect(user)
    await ws.chat("go", context={"current_page": "m_page"})
    while (ev := await ws.recv())["type"] != "tool_start":
        pass
    started = time.monotonic()
    await ws.send({"type": "chat.cancel", "run_id": ev["run_id"]})
    while (ev := await ws.recv())["type"] not in ("cancelled", "complete"):
        pass
    assert ev["type"] == "cancelled" and time.monotonic() - started < 5
    await ws.close()


async def test_a_server_that_is_down_gives_a_clear_error(user: Any, scripted: Any, http_url: str) -> None:
    server = await database_sync_to_async(make_server)("http", http_url, require_approval=False)
    server.url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
    await server.asave()
    outcome = await database_sync_to_async(mcp_server_refresh)(server=server)
    assert outcome.error == "MCP server 't' is unreachable (ConnectError)."
    assert outcome.tools  # the tools listed before are kept
    scripted.enqueue(s.tool_call("t__count", {"n": 1}), s.text("down"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws, approve=None)
    assert events[-1]["type"] == "complete" and output(events) == "Error: MCP server 't' is unreachable (ConnectError)."
    await ws.close()


async def test_a_server_that_misbehaves_gives_a_clear_error(user: Any, scripted: Any, http_url: str) -> None:
    server = await database_sync_to_async(make_server)("http", http_url, require_approval=False)
    server.transport, server.command, server.timeout = "stdio", sys.executable, 4.0
    server.args = ["-c", "import sys; print('this is not JSON-RPC', flush=True); sys.stdin.read()"]
    await server.asave()
    scripted.enqueue(s.tool_call("t__count", {"n": 1}), s.text("broken"), s.tool_call("t__count", {"n": 1}, tool_id="toolu_2"), s.text("dead"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws, approve=None)
    assert output(events) == "Error: MCP server 't' did not answer within 4 s; the call was stopped."
    server.args = ["-c", "import sys; sys.exit(3)"]  # a server that dies at once
    await server.asave()
    events = await run_turn(ws, approve=None, conversation_id=events[-1]["conversation_id"])
    assert events[-1]["type"] == "complete"
    assert output(events) == "Error: MCP server 't' closed the connection (it stopped or crashed)."
    await ws.close()


# ---- who may use it -------------------------------------------------------------------------------


async def test_a_server_restricted_to_groups_in_the_admin_applies_on_the_next_turn(user: Any, scripted: Any, http_url: str, django_user_model: Any) -> None:
    from django.test import Client

    server = await database_sync_to_async(make_server)("http", http_url)
    editors = await Group.objects.acreate(name="editors")
    root = await database_sync_to_async(django_user_model.objects.create_superuser)(username="root", password="pw")
    staff = Client()
    await database_sync_to_async(staff.force_login)(root)
    ws, _ = await ws_connect(user)  # one socket for every turn: no reconnect, no restart
    scripted.enqueue(s.text("1"), s.text("2"), s.text("3"))
    conv = (await run_turn(ws))[-1]["conversation_id"]
    assert "t__count" in offered(scripted.requests[-1])

    r = await database_sync_to_async(staff.post)(f"/admin/pagechat_tools/mcpserver/{server.pk}/change/", {
        "name": "t", "enabled": "on", "transport": "http", "timeout": "30", "require_approval": "on", "url": http_url,
        "args": "[]", "env": "{}", "headers": "{}", "pages": ["m_page"], "groups": [editors.pk]})
    assert r.status_code == 302, r.content[:3000]
    events = await run_turn(ws, conversation_id=conv)
    assert not any(name.startswith("t__") for name in offered(scripted.requests[-1]))
    run = await Run.objects.aget(pk=events[-1]["run_id"])
    assert run.diagnostics["tools_withheld"]["t__count"] == "restricted to group editors"

    await user.groups.aadd(editors)
    await run_turn(ws, conversation_id=conv)
    assert "t__count" in offered(scripted.requests[-1])
    await ws.close()


# ---- secrets --------------------------------------------------------------------------------------


async def test_secrets_come_from_the_environment_and_are_never_stored_or_logged(
        user: Any, scripted: Any, transport: tuple[str, str], monkeypatch: Any, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MCP_TEST_KEY", SECRET)
    kind, url = transport
    refs = {"headers": {"X-Api-Key": "MCP_TEST_KEY"}} if kind == "http" else {"env": {"TOKEN": "MCP_TEST_KEY"}}
    await database_sync_to_async(make_server)(kind, url, require_approval=False, **refs)
    scripted.enqueue(s.tool_call("t__whoami", {}), s.text("done"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws, approve=None)
    digest = hashlib.sha256(SECRET.encode()).hexdigest()[:12]
    # the secret reached the server (as the header over HTTP, as the variable over stdio) ...
    assert output(events) == (f"header={digest} env=none" if kind == "http" else f"header=none env={digest}")
    # ... and nothing stored or logged holds it
    stored = await database_sync_to_async(lambda: [
        *McpServer.objects.values_list(), *Tool.objects.values_list(), *ToolCall.objects.values_list(), *Run.objects.values_list(),
    ])()
    assert SECRET not in repr(stored)
    assert SECRET not in caplog.text
    await ws.close()


async def test_a_missing_variable_is_a_clear_error_naming_it_only_to_staff(user: Any, scripted: Any, http_url: str, monkeypatch: Any) -> None:
    monkeypatch.delenv("MCP_ABSENT_KEY", raising=False)
    server = await database_sync_to_async(make_server)("http", http_url, require_approval=False)
    server.headers = {"Authorization": "Bearer ${MCP_ABSENT_KEY}"}
    await server.asave()
    outcome = await database_sync_to_async(mcp_server_refresh)(server=server)
    assert "MCP_ABSENT_KEY is not set" in outcome.error  # the admin shows staff which one
    scripted.enqueue(s.tool_call("t__count", {"n": 1}), s.text("no key"))
    ws, _ = await ws_connect(user)
    events = await run_turn(ws, approve=None)
    assert output(events) == "Error: MCP server 't' is not configured correctly: an environment variable it needs is not set."
    await ws.close()


def test_the_admin_refuses_a_secret_typed_in_and_lists_tools_on_save(admin_client: Any, http_url: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("MCP_TEST_KEY", SECRET)
    form = {"name": "web", "enabled": "on", "transport": "http", "timeout": "30", "require_approval": "on", "url": http_url,
            "args": "[]", "env": "{}", "pages": ["m_page"]}
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", {**form, "headers": '{"X-Api-Key": "sk-live-AbC123"}'})
    assert r.status_code == 200 and "names no environment variable" in r.content.decode()
    assert not McpServer.objects.exists()
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", {**form, "headers": '{"Authorization": "Bearer ${MCP_TEST_KEY}"}'}, follow=True)
    assert "web: 5 tools (web__count, web__sleep, web__whoami, web__fail, web__wipe)." in [str(m) for m in r.context["messages"]]
    server = McpServer.objects.get(name="web")
    assert [t["name"] for t in server.tools][:2] == ["count", "sleep"] and server.headers == {"Authorization": "Bearer ${MCP_TEST_KEY}"}
    assert Tool.objects.filter(module="mcp:web").count() == 5
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", {**form, "name": "a__b", "headers": "{}"})
    assert r.status_code == 200 and not McpServer.objects.filter(name="a__b").exists()


def test_checks_name_a_misconfigured_server(monkeypatch: Any) -> None:
    from tools.checks import mcp_server_problems

    monkeypatch.delenv("MCP_ABSENT_KEY", raising=False)
    servers = [
        McpServer(name="a", transport="stdio", command=""),
        McpServer(name="b", transport="stdio", command="/no/such/program"),
        McpServer(name="c", transport="http", url=""),
        McpServer(name="d", transport="http", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer ${MCP_ABSENT_KEY}", "X-Key": "pasted secret"}),
        McpServer(name="ok", transport="stdio", command=sys.executable, env={"PATH_TOO": "PATH"}),
    ]
    found = [(m.id, m.msg) for m in mcp_server_problems(servers)]
    assert found == [
        ("tools.E010", "MCP server 'a' has no command"),
        ("tools.E010", "MCP server 'b': command '/no/such/program' is not found"),
        ("tools.E010", "MCP server 'c' has no http(s) URL"),
        ("tools.W010", "MCP server 'd': headers 'Authorization' needs environment variable MCP_ABSENT_KEY, which is not set"),
        ("tools.E011", "MCP server 'd': headers 'X-Key' names no environment variable: write NAME or a template with ${NAME}, "
                       "upper-case (never the secret itself)"),
    ]


def test_the_server_forms_refusals_speak_the_staff_users_language() -> None:
    from django.utils import translation

    from tools.admin import McpServerForm

    data = {"name": "x", "transport": "http", "url": "http://127.0.0.1:1/mcp", "headers": '{"X-Key": "pasted secret", "Y": ""}',
            "env": "{}", "args": "[]", "timeout": "30", "pages": []}
    with translation.override("de"):
        errors = McpServerForm(data=data).errors["headers"]
    assert errors == ["X-Key: nennt keine Umgebungsvariable: schreiben Sie NAME oder eine Vorlage mit ${NAME}, in Großbuchstaben "
                      "(nie das Geheimnis selbst)", "Y: muss der Name einer Umgebungsvariablen sein oder eine Vorlage wie 'Bearer ${API_TOKEN}'"]
