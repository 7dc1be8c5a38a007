"""Where an MCP server may be, and who may make this server run a command.

An HTTP server at a loopback, private or link-local address (or a name resolving to one) is refused when staff save
it and again when a call connects, unless CHAT_MCP_ALLOWED_NETWORKS allows its network: a real listener on a random
local port proves no connection (so no request and no secret header) reaches it. A stdio server runs a command on
this server: only superusers may add or change one."""
from __future__ import annotations

import re
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from tools.addresses import AddressRefused, guarded_transport, networks
from tools.mcp import mcp_server_refresh, mcp_tools_register
from tools.mcp_client import McpServerConfig, mcp_tool_call
from tools.models import McpServer

pytestmark = pytest.mark.django_db(transaction=True)
SERVER_APP = Path(__file__).with_name("mcp_server_app.py")
SECRET = "s3cret-never-sent-anywhere"


class Listener:
    """A TCP listener on a random port that records every connection made to it (and what was sent)."""

    def __init__(self, host: str = "127.0.0.1", family: socket.AddressFamily = socket.AF_INET, answer: bytes = b"") -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = int(self.sock.getsockname()[1])
        self.answer = answer
        self.connections: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(1)
                try:
                    data = conn.recv(65536)
                    if self.answer:
                        conn.sendall(self.answer)
                except OSError:
                    data = b""
                self.connections.append(data)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


@pytest.fixture
def listener6() -> Iterator[Listener]:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        found = Listener("::1", socket.AF_INET6)
    except OSError:
        pytest.skip("::1 is not available here")
    yield found
    found.close()


@pytest.fixture(autouse=True)
def clean_rows(settings: Any, monkeypatch: Any) -> Iterator[None]:
    settings.CHAT_MCP_ALLOWED_NETWORKS = ""  # the default: public addresses only
    monkeypatch.setenv("MCP_ADDR_KEY", SECRET)
    yield
    McpServer.objects.all().delete()
    mcp_tools_register()


def http_form(url: str, **extra: Any) -> dict[str, Any]:
    return {"name": "probe", "enabled": "on", "transport": "http", "timeout": "5", "require_approval": "on", "url": url,
            "args": "[]", "env": "{}", "headers": '{"X-Api-Key": "MCP_ADDR_KEY"}', **extra}


def staff_client(django_user_model: Any, *codenames: str) -> Client:
    user = django_user_model.objects.create_user("mcpstaff", password="x", is_staff=True)
    user.user_permissions.add(*(Permission.objects.get(content_type__app_label="pagechat_tools", codename=c) for c in codenames))
    client = Client()
    client.force_login(user)
    return client


# ---- saving a server in the admin -----------------------------------------------------------------


@pytest.mark.parametrize(("url", "why"), [
    ("http://127.0.0.1:{port}/mcp", "loopback address 127.0.0.1"),
    ("http://localhost:{port}/mcp", "localhost resolves to a loopback address 127.0.0.1"),
    ("http://[::ffff:127.0.0.1]:{port}/mcp", "loopback address 127.0.0.1"),
    ("http://169.254.169.254/latest/meta-data/", "link-local address 169.254.169.254"),
    ("http://10.0.0.1:{port}/mcp", "private address 10.0.0.1"),
    ("http://192.168.1.20/mcp", "private address 192.168.1.20"),
    ("https://[fe80::1]/mcp", "link-local address fe80::1"),
    ("http://0.0.0.0:{port}/mcp", "private address 0.0.0.0"),  # connects to this machine on Linux
])
def test_the_admin_refuses_a_server_at_a_non_public_address_and_connects_nowhere(
        admin_client: Client, listener: Listener, url: str, why: str) -> None:
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", http_form(url.format(port=listener.port)))
    assert r.status_code == 200
    errors = r.context["adminform"].form.errors["url"]
    assert errors == [f"This URL is refused ({why}): only servers at public addresses can be registered, unless "
                      "CHAT_MCP_ALLOWED_NETWORKS allows the network."]
    assert not McpServer.objects.exists()
    assert listener.connections == []


def test_the_admin_refuses_ipv6_loopback_and_connects_nowhere(admin_client: Client, listener6: Listener) -> None:
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", http_form(f"http://[::1]:{listener6.port}/mcp"))
    assert r.status_code == 200 and "loopback address ::1" in r.context["adminform"].form.errors["url"][0]
    assert not McpServer.objects.exists() and listener6.connections == []


def test_a_host_that_does_not_resolve_is_refused(admin_client: Client) -> None:
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", http_form("http://no-such-host.invalid/mcp"))
    assert r.status_code == 200 and "cannot resolve no-such-host.invalid" in r.context["adminform"].form.errors["url"][0]


def test_an_allowed_network_is_saved_and_connected_to(admin_client: Client, listener: Listener, settings: Any) -> None:
    url = f"http://127.0.0.1:{listener.port}/mcp"
    settings.CHAT_MCP_ALLOWED_NETWORKS = "127.0.0.2/32, 10.0.0.0/8"  # other networks allowed: not this one
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", http_form(url))
    assert r.status_code == 200 and not McpServer.objects.exists() and listener.connections == []
    settings.CHAT_MCP_ALLOWED_NETWORKS = "10.0.0.0/8,127.0.0.1/32"
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", http_form(url), follow=True)
    assert r.status_code == 200 and McpServer.objects.filter(name="probe").exists()
    # saving lists its tools at once: the listener saw the request, with the header it was configured with
    assert listener.connections and b"POST /mcp" in listener.connections[0] and SECRET.encode() in listener.connections[0]


# ---- connecting -----------------------------------------------------------------------------------


def test_a_row_saved_without_the_admin_is_refused_when_it_connects(listener: Listener) -> None:
    """A server row made before this check, or by code: listing and calling its tools connect nowhere."""
    server = McpServer.objects.create(name="old", transport="http", url=f"http://localhost:{listener.port}/mcp", timeout=5,
                                      headers={"X-Api-Key": "MCP_ADDR_KEY"}, tools=[{"name": "count", "input_schema": {"type": "object"}}])
    outcome = mcp_server_refresh(server=server)
    assert outcome.error == ("MCP server 'old' is refused (localhost resolves to a loopback address 127.0.0.1): only public "
                             "addresses, unless CHAT_MCP_ALLOWED_NETWORKS allows the network.")
    assert outcome.tools == ["old__count"]  # the tools listed before are kept

    async def call() -> list[Any]:
        return [item async for item in mcp_tool_call(McpServerConfig.of(server), "count", {"n": 1})]

    from asgiref.sync import async_to_sync

    items = async_to_sync(call)()
    assert [(i.text, i.is_error) for i in items] == [("Error: MCP server 'old' is refused: its address is not a public one.", True)]
    assert listener.connections == []


async def test_every_connection_is_checked_when_it_is_opened(listener: Listener) -> None:
    """The client's own check: a name resolved at connect time (as after DNS rebinding) to a refused address."""
    import httpx2

    async with httpx2.AsyncClient(transport=guarded_transport(networks(""))) as client:
        with pytest.raises(AddressRefused, match=re.escape("localhost resolves to a loopback address 127.0.0.1")):
            await client.get(f"http://localhost:{listener.port}/mcp")
    assert listener.connections == []


async def test_a_redirect_to_a_refused_address_is_not_followed() -> None:
    target = Listener("127.0.0.2")
    origin = Listener(answer=f"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.2:{target.port}/mcp\r\n"
                             "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
    try:
        import httpx2

        async with httpx2.AsyncClient(transport=guarded_transport(networks("127.0.0.1/32")), follow_redirects=True) as client:
            with pytest.raises(AddressRefused, match=re.escape("loopback address 127.0.0.2")):
                await client.get(f"http://127.0.0.1:{origin.port}/mcp")
        assert len(origin.connections) == 1 and target.connections == []
    finally:
        origin.close()
        target.close()


# ---- stdio: a command this server runs ------------------------------------------------------------


def stdio_form(marker: Path, **extra: Any) -> dict[str, Any]:
    return {"name": "runner", "enabled": "on", "transport": "stdio", "timeout": "5", "require_approval": "on", "url": "",
            "command": sys.executable, "args": f'["-c", "open({str(marker)!r}, \\"w\\").close()"]', "cwd": "", "env": "{}",
            "headers": "{}", **extra}


def test_staff_who_are_not_superusers_cannot_add_a_stdio_server(django_user_model: Any, tmp_path: Path) -> None:
    client = staff_client(django_user_model, "add_mcpserver", "change_mcpserver", "view_mcpserver")
    marker = tmp_path / "ran"
    page = client.get("/admin/pagechat_tools/mcpserver/add/")
    assert page.status_code == 200
    assert [v for v, _ in page.context["adminform"].form.fields["transport"].choices] == ["http"]  # not offered
    r = client.post("/admin/pagechat_tools/mcpserver/add/", stdio_form(marker))
    assert r.status_code == 200 and "transport" in r.context["adminform"].form.errors
    assert not McpServer.objects.exists() and not marker.exists()


def test_staff_who_are_not_superusers_cannot_change_a_stdio_server(django_user_model: Any, tmp_path: Path) -> None:
    server = McpServer.objects.create(name="runner", transport="stdio", command=sys.executable, args=["-V"])
    client = staff_client(django_user_model, "change_mcpserver", "view_mcpserver")
    marker = tmp_path / "ran"
    assert client.get(f"/admin/pagechat_tools/mcpserver/{server.pk}/change/").status_code == 200  # they may look at it
    r = client.post(f"/admin/pagechat_tools/mcpserver/{server.pk}/change/", stdio_form(marker))
    assert r.status_code == 403
    server.refresh_from_db()
    assert server.args == ["-V"] and not marker.exists()


def test_staff_who_are_not_superusers_cannot_turn_an_http_server_into_a_stdio_one(
        django_user_model: Any, tmp_path: Path, settings: Any) -> None:
    settings.CHAT_MCP_ALLOWED_NETWORKS = "127.0.0.1/32"
    server = McpServer.objects.create(name="runner", transport="http", url="http://127.0.0.1:9/mcp", enabled=False)
    client = staff_client(django_user_model, "change_mcpserver", "view_mcpserver")
    marker = tmp_path / "ran"
    r = client.post(f"/admin/pagechat_tools/mcpserver/{server.pk}/change/", stdio_form(marker, enabled=""))
    assert r.status_code == 200 and "transport" in r.context["adminform"].form.errors
    server.refresh_from_db()
    assert (server.transport, server.command) == ("http", "") and not marker.exists()
    # an HTTP server they may still edit; the stdio fields are not theirs to set
    r = client.post(f"/admin/pagechat_tools/mcpserver/{server.pk}/change/",
                    {**http_form("http://127.0.0.1:9/mcp", name="runner", enabled=""), "command": sys.executable})
    assert r.status_code == 302
    server.refresh_from_db()
    assert (server.transport, server.command) == ("http", "")


def test_a_superuser_adds_a_stdio_server(admin_client: Client) -> None:
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", {
        "name": "local", "enabled": "on", "transport": "stdio", "timeout": "30", "require_approval": "on", "url": "",
        "command": sys.executable, "args": f'["{SERVER_APP}"]', "cwd": "", "env": "{}", "headers": "{}"}, follow=True)
    assert r.status_code == 200
    assert [t["name"] for t in McpServer.objects.get(name="local").tools] == ["count", "sleep", "whoami", "fail", "wipe"]


def test_refreshing_tools_needs_the_change_permission(django_user_model: Any, listener: Listener, settings: Any) -> None:
    settings.CHAT_MCP_ALLOWED_NETWORKS = "127.0.0.1/32"
    server = McpServer.objects.create(name="probe", transport="http", url=f"http://127.0.0.1:{listener.port}/mcp", timeout=5)
    client = staff_client(django_user_model, "view_mcpserver")
    r = client.post("/admin/pagechat_tools/mcpserver/", {"action": "refresh_tools", "_selected_action": [server.pk]})
    assert r.status_code in (200, 302)
    server.refresh_from_db()
    assert server.tools_refreshed_at is None and listener.connections == []


def test_the_refusal_speaks_the_staff_users_language() -> None:
    from django.utils import translation

    from tools.admin import McpServerForm

    data = {"name": "x", "transport": "http", "url": "http://127.0.0.1:1/mcp", "headers": "{}", "env": "{}", "args": "[]",
            "timeout": "30", "pages": []}
    with translation.override("fr"):
        errors = McpServerForm(data=data).errors["url"]
    assert errors == ["Cette URL est refusée (loopback address 127.0.0.1) : seuls des serveurs à des adresses publiques peuvent "
                      "être enregistrés, sauf si CHAT_MCP_ALLOWED_NETWORKS autorise le réseau."]
