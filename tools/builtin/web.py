"""Web tools: `fetch_webpage` (a real HTTP fetch, refusing private addresses) and `web_search` (a pluggable backend).

fetch_webpage resolves the host itself, refuses any address that is not public (loopback, private, link-local,
multicast, reserved...) unless CHAT_FETCH_ALLOWED_NETWORKS allows it (tools/addresses.py, the rules MCP servers
follow too), then connects to exactly that address (so a second DNS answer cannot swap in another one), and checks
every redirect's target the same way. It reads at most CHAT_FETCH_MAX_BYTES within CHAT_FETCH_TIMEOUT and returns
the page's text (stdlib html.parser).
"""
from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _

from chat.agent.types import ToolContext, ToolResult
from chat.conf import chat_settings
from tools.addresses import AddressRefused, IPAddress, Network, networks, resolve_allowed
from tools.registry import tool

USER_AGENT = "pagechat-fetch/1.0 (+https://github.com/; a chat assistant fetching one page for its user)"
TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")


class FetchRefused(Exception):
    """The URL may not be fetched (scheme, address, size, type); the message is safe to show."""


# ---- addresses ----------------------------------------------------------------------------------


def allowed_networks(raw: str | None = None) -> list[Network]:
    """CHAT_FETCH_ALLOWED_NETWORKS as networks (a bad entry is skipped: the check reports it)."""
    return networks(chat_settings.CHAT_FETCH_ALLOWED_NETWORKS if raw is None else raw)


async def resolve_public(host: str, port: int) -> IPAddress:
    """The first address of `host` if every address it resolves to may be fetched; raises FetchRefused otherwise."""
    try:
        return await resolve_allowed(host, port, allowed_networks())
    except AddressRefused as exc:
        raise FetchRefused(str(exc) if exc.unresolved else f"refusing to fetch {host}: it resolves to a {exc.reason}") from None


# ---- text ----------------------------------------------------------------------------------------


class TextExtractor(HTMLParser):
    """Readable text of an HTML page: title, headings and paragraphs; scripts, styles and the like skipped."""

    SKIP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "head", "object"})
    BLOCK = frozenset({"p", "div", "br", "li", "tr", "section", "article", "header", "footer", "h1", "h2", "h3",
                       "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol", "dt", "dd", "main", "nav"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.parts: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self.SKIP:
            self._skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIP and self._skip:
            self._skip -= 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).splitlines())
        return "\n".join(line for line in lines if line)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document."""
    parser = TextExtractor()
    parser.feed(html)
    parser.close()
    return " ".join(parser.title.split()), parser.text()


# ---- fetching ------------------------------------------------------------------------------------


@dataclass
class FetchedPage:
    url: str
    status: int
    content_type: str
    title: str
    text: str
    truncated: bool
    redirects: list[str] = field(default_factory=list)


def _check_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL without credentials; raises FetchRefused otherwise."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise FetchRefused(f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise FetchRefused("only http and https URLs can be fetched")
    if not parts.hostname:
        raise FetchRefused("the URL has no host")
    if parts.username or parts.password:
        raise FetchRefused("URLs with credentials are not fetched")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


async def fetch_page(url: str, *, transport: httpx.AsyncBaseTransport | None = None) -> FetchedPage:
    """Fetch one page as described in the module docstring; raises FetchRefused (or httpx errors)."""
    max_bytes = chat_settings.CHAT_FETCH_MAX_BYTES
    timeout = chat_settings.CHAT_FETCH_TIMEOUT
    redirects: list[str] = []
    async with httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(timeout), follow_redirects=False,
                                 trust_env=False) as client:
        async with asyncio.timeout(timeout):
            for _hop in range(chat_settings.CHAT_FETCH_MAX_REDIRECTS + 1):
                scheme, host, port = _check_url(url)
                ip = await resolve_public(host, port)
                parts = urlsplit(url)
                # connect to the address just checked; the Host header and TLS name stay the URL's own
                ip_host = f"[{ip}]" if isinstance(ip, ipaddress.IPv6Address) else str(ip)
                target = urlunsplit((scheme, f"{ip_host}:{port}", parts.path or "/", parts.query, ""))
                request = client.build_request("GET", target, headers={
                    "Host": parts.netloc.rsplit("@", 1)[-1], "User-Agent": USER_AGENT,
                    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"},
                    extensions={"sni_hostname": host} if scheme == "https" else {})
                response = await client.send(request, stream=True)
                try:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        redirects.append(url)
                        continue
                    return await _read(response, url, max_bytes, redirects)
                finally:
                    await response.aclose()
            raise FetchRefused(f"more than {chat_settings.CHAT_FETCH_MAX_REDIRECTS} redirects")


async def _read(response: httpx.Response, url: str, max_bytes: int, redirects: list[str]) -> FetchedPage:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type and content_type not in TEXT_TYPES:
        raise FetchRefused(f"the page is {content_type}, not text or HTML")
    declared = response.headers.get("content-length", "")
    chunks: list[bytes] = []
    size = 0
    truncated = declared.isdigit() and int(declared) > max_bytes
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= max_bytes:
            truncated = True
            break
    body = b"".join(chunks)[:max_bytes]
    text = body.decode(response.charset_encoding or "utf-8", errors="replace")
    title, content = html_to_text(text) if content_type != "text/plain" else ("", text.strip())
    return FetchedPage(url=url, status=response.status_code, content_type=content_type or "text/html", title=title,
                       text=content, truncated=truncated, redirects=redirects)


@tool(is_global=True, title=_("Read a web page"))
async def fetch_webpage(url: str) -> ToolResult:
    """Fetch a public web page by its http(s) URL and read its title and text."""
    try:
        page = await fetch_page(url)
    except FetchRefused as exc:
        return ToolResult(f"Not fetched: {exc}.", is_error=True)
    except (httpx.HTTPError, TimeoutError) as exc:
        return ToolResult(f"Could not fetch {url}: {type(exc).__name__}.", is_error=True)
    limit = chat_settings.CHAT_FETCH_MAX_CHARS
    body = page.text[:limit]
    notes = []
    if page.truncated or len(page.text) > limit:
        notes.append("(the page was cut off)")
    if page.redirects:
        notes.append(f"(redirected to {page.url})")
    head = f"{page.title}\n{page.url} — HTTP {page.status}" if page.title else f"{page.url} — HTTP {page.status}"
    return ToolResult(f"{head} {' '.join(notes)}\n\n{body}".strip(), is_error=page.status >= 400)


# ---- web search ----------------------------------------------------------------------------------


@dataclass
class WebSearchResults:
    """What a web search backend returns: results as {title, url, snippet}, and what it searched (shown to the user)."""

    results: list[dict[str, str]]
    backend: str


WebSearchBackend = Callable[[str, int, ToolContext], WebSearchResults]


def web_search_backend() -> WebSearchBackend | None:
    """The configured backend (CHAT_WEB_SEARCH_BACKEND), or None."""
    path = chat_settings.CHAT_WEB_SEARCH_BACKEND
    if not path:
        return None
    backend = import_string(path)
    found: WebSearchBackend = backend() if isinstance(backend, type) else backend  # a class: one instance per call
    return found


@tool(is_global=True, title=_("Web search"))
def web_search(query: str, limit: int = 5, *, ctx: ToolContext) -> ToolResult:
    """Search the web for pages about a query and show the results (title, address and snippet)."""
    backend = web_search_backend()
    if backend is None:
        return ToolResult("Web search is not configured on this site (CHAT_WEB_SEARCH_BACKEND).", is_error=True)
    found = backend(query, max(1, min(int(limit), 10)), ctx)
    results = [{"title": str(r.get("title", ""))[:300], "url": str(r.get("url", ""))[:2000], "snippet": str(r.get("snippet", ""))[:500]}
               for r in found.results]
    lines = [f"{k + 1}. {r['title']} — {r['url']}\n   {r['snippet']}" for k, r in enumerate(results)]
    text = f"{found.backend}\n" + ("\n".join(lines) if lines else f"No results for {query!r}.")
    return ToolResult(text, payload={"type": "web_search_results", "data": {"query": query, "backend": found.backend, "results": results}})


