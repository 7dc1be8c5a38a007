"""fetch_webpage against a real local HTTP server (refusals of private addresses included) and web_search's backends."""
from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chat.agent.types import ToolContext
from tools.addresses import address_refusal
from tools.builtin.web import allowed_networks, fetch_webpage, html_to_text, web_search
from tools.registry import registry

PAGE = b"""<!doctype html><html><head><title>Local  test page</title><style>p{color:red}</style>
<script>var secret = "do not read me";</script></head>
<body><nav>Menu</nav><h1>Heading &amp; more</h1><p>First paragraph.</p><p>Second <b>bold</b> paragraph.</p>
<noscript>enable js</noscript></body></html>"""
HITS: list[str] = []


class Handler(BaseHTTPRequestHandler):
    """Routes of the local site; every request's path and Host header is recorded."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", ctype: str = "text/html; charset=utf-8", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        HITS.append(f"{self.headers.get('Host')} {self.path}")
        routes = {
            "/page": lambda: self._send(200, PAGE),
            "/plain": lambda: self._send(200, "just text, é".encode(), "text/plain; charset=utf-8"),
            "/big": lambda: self._send(200, b"<p>" + b"x" * 3_000_000 + b"</p>"),
            "/image": lambda: self._send(200, b"\x89PNG....", "image/png"),
            "/missing": lambda: self._send(404, b"<title>Not here</title><p>nope</p>"),
            "/hop": lambda: self._send(302, Location="/page"),
            "/to-metadata": lambda: self._send(302, Location="http://169.254.169.254/latest/meta-data/"),
            "/to-private": lambda: self._send(302, Location="http://10.20.30.40/admin"),
            "/to-loopback": lambda: self._send(302, Location="http://127.0.0.5:1/x"),
            "/loop": lambda: self._send(302, Location="/loop"),
        }
        if self.path == "/slow":
            time.sleep(2)
            try:
                self._send(200, PAGE)
            except BrokenPipeError:  # the client gave up first, as it should
                pass
            return
        routes.get(self.path, lambda: self._send(404, b"no route"))()


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def local_allowed(settings: Any) -> None:
    """Only the local server's exact address is allowed; every other private address stays refused."""
    settings.CHAT_FETCH_ALLOWED_NETWORKS = "127.0.0.1/32"


async def test_fetches_a_local_page_as_text(site: str, local_allowed: None) -> None:
    HITS.clear()
    result = await fetch_webpage(f"{site}/page")
    assert not result.is_error
    assert result.text.startswith(f"Local test page\n{site}/page — HTTP 200")
    body = result.text.split("\n\n", 1)[1]
    assert body == "Menu\nHeading & more\nFirst paragraph.\nSecond bold paragraph."
    assert "secret" not in result.text and "color" not in result.text and "enable js" not in result.text
    assert [f"{site.removeprefix('http://')} /page"] == HITS  # the URL's own Host header, though the address was connected to


async def test_plain_text_404_and_redirects(site: str, local_allowed: None) -> None:
    plain = await fetch_webpage(f"{site}/plain")
    assert plain.text.endswith("just text, é") and not plain.is_error
    missing = await fetch_webpage(f"{site}/missing")
    assert missing.is_error and "HTTP 404" in missing.text
    hop = await fetch_webpage(f"{site}/hop")
    assert "(redirected to " in hop.text and "First paragraph." in hop.text
    loop = await fetch_webpage(f"{site}/loop")
    assert loop.is_error and "more than 5 redirects" in loop.text


async def test_size_cap_type_and_timeout(site: str, local_allowed: None, settings: Any) -> None:
    settings.CHAT_FETCH_MAX_BYTES = 10_000
    big = await fetch_webpage(f"{site}/big")
    assert "(the page was cut off)" in big.text and len(big.text) < 10_200
    image = await fetch_webpage(f"{site}/image")
    assert image.is_error and "image/png, not text or HTML" in image.text
    settings.CHAT_FETCH_TIMEOUT = 0.5
    started = time.monotonic()
    slow = await fetch_webpage(f"{site}/slow")
    assert slow.is_error and "Could not fetch" in slow.text and time.monotonic() - started < 1.5


async def test_redirects_to_private_addresses_are_refused(site: str, local_allowed: None) -> None:
    HITS.clear()
    for path, why in (("/to-metadata", "link-local address 169.254.169.254"), ("/to-private", "private address 10.20.30.40"),
                      ("/to-loopback", "loopback address 127.0.0.5")):
        result = await fetch_webpage(f"{site}{path}")
        assert result.is_error and result.text.startswith("Not fetched: refusing to fetch") and why in result.text, result.text
    assert len(HITS) == 3  # only the local redirects themselves were requested


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:1/", "http://localhost:1/", "http://[::1]:1/", "http://[::ffff:127.0.0.1]:1/", "http://127.0.0.2:1/",
    "http://10.0.0.1/", "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data/", "http://0.0.0.0:1/",
    "http://100.64.0.1/", "http://[fe80::1]/", "http://224.0.0.1/",
])
async def test_private_loopback_and_link_local_addresses_are_refused(url: str) -> None:
    result = await fetch_webpage(url)
    assert result.is_error and result.text.startswith("Not fetched: refusing to fetch"), result.text


async def test_the_local_server_itself_is_refused_unless_allowed(site: str, settings: Any) -> None:
    HITS.clear()
    refused = await fetch_webpage(f"{site}/page")
    assert refused.is_error and "loopback address 127.0.0.1" in refused.text
    settings.CHAT_FETCH_ALLOWED_NETWORKS = "127.0.0.2/32"  # another address allowed is not this one
    assert (await fetch_webpage(f"{site}/page")).is_error
    assert HITS == []


@pytest.mark.parametrize(("url", "why"), [
    ("ftp://example.com/x", "only http and https"), ("file:///etc/passwd", "only http and https"),
    ("http://user:pw@example.com/", "credentials"), ("http:///nohost", "no host"), ("http://[::1/", "not a valid URL"),
])
async def test_bad_urls_are_refused_before_any_connection(url: str, why: str) -> None:
    result = await fetch_webpage(url)
    assert result.is_error and why in result.text


def test_address_rules() -> None:
    ip = ipaddress.ip_address
    assert address_refusal(ip("93.184.215.14"), []) is None
    assert address_refusal(ip("2606:4700::1111"), []) is None
    assert address_refusal(ip("::ffff:10.0.0.1"), []) == "private address 10.0.0.1"
    assert address_refusal(ip("10.1.2.3"), allowed_networks("10.1.0.0/16, bogus")) is None
    assert allowed_networks(" 127.0.0.1/32 ,, nope") == [ipaddress.ip_network("127.0.0.1/32")]


def test_text_extraction_keeps_blocks_and_drops_code() -> None:
    title, text = html_to_text("<title>T</title><div>a<script>x()</script></div><ul><li>one</li><li>two</li></ul><p>b&nbsp;c</p>")
    assert (title, text) == ("T", "a\none\ntwo\nb c")


def test_both_tools_are_global_and_read_only() -> None:
    for name in ("fetch_webpage", "web_search"):
        spec = registry.get(name)
        assert spec is not None and spec.is_global and not spec.requires_approval and not spec.problems
    assert registry.get("fetch_webpage").input_schema["required"] == ["url"]  # type: ignore[union-attr]


@pytest.mark.django_db
def test_web_search_backends(settings: Any, corpus: int, user: Any) -> None:
    ctx = ToolContext(user=user, conversation_id=1, run_id="r", context={})
    settings.CHAT_WEB_SEARCH_BACKEND = ""
    off = web_search("CRISPR", ctx=ctx)
    assert off.is_error and "not configured" in off.text
    settings.CHAT_WEB_SEARCH_BACKEND = "pages.demo.web_search.corpus_search"
    found = web_search("CRISPR sickle cell", limit=3, ctx=ctx)
    assert found.text.startswith("Demo search backend: these results come from this site's own article corpus, not from the web.")
    assert found.payload is not None and found.payload["type"] == "web_search_results"
    results = found.payload["data"]["results"]
    assert len(results) == 3 and all(r["url"].startswith("/articles/") for r in results)
    assert any("crispr" in r["title"].lower() or "sickle" in r["title"].lower() for r in results)


def test_checks_name_a_bad_backend_and_bad_networks(settings: Any) -> None:
    from tools.checks import web_tool_problems

    assert web_tool_problems() == []
    settings.CHAT_WEB_SEARCH_BACKEND = "no.such.module.search"
    settings.CHAT_FETCH_ALLOWED_NETWORKS = "10.0.0.0/8, 300.1.1.1/32"
    problems = web_tool_problems()
    assert [p.id for p in problems] == ["tools.E005", "tools.E006"]
    assert "300.1.1.1/32" in problems[1].msg


async def test_https_checks_the_certificate_against_the_urls_host(tmp_path: Any, settings: Any) -> None:
    """Over TLS the request goes to the checked address, but SNI and certificate checks use the URL's host name."""
    import shutil
    import ssl
    import subprocess

    import httpx

    from tools.builtin.web import fetch_page

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server.socket = server_ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    settings.CHAT_FETCH_ALLOWED_NETWORKS = "127.0.0.1/32,::1/128"
    client_ctx = ssl.create_default_context(cafile=str(cert))
    try:
        HITS.clear()
        page = await fetch_page(f"https://localhost:{port}/page", transport=httpx.AsyncHTTPTransport(verify=client_ctx))
        assert page.title == "Local test page" and page.status == 200
        assert [f"localhost:{port} /page"] == HITS
        # the certificate names localhost, not 127.0.0.1: a URL naming the address fails verification
        with pytest.raises(httpx.ConnectError):
            await fetch_page(f"https://127.0.0.1:{port}/page", transport=httpx.AsyncHTTPTransport(verify=client_ctx))
    finally:
        server.shutdown()
        server.server_close()
