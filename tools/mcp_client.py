"""One MCP tool server as a client sees it (the official `mcp` SDK): its configuration from the staff's row, secrets
from the environment (read at each call, never stored, logged or shown), a session per call bounded by the server's
timeout and refused on private networks, listing its tools, and a call that streams the server's progress as
`ToolProgress` and turns every failure into a clear tool error. The registry side is tools/mcp.py.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from chat.agent.types import ToolProgress, ToolResult
from chat.conf import chat_settings
from tools.addresses import AddressRefused, Network, guarded_transport, networks, resolve_allowed, url_host

if TYPE_CHECKING:
    from mcp import Client

    from tools.models import McpServer

log = logging.getLogger(__name__)

SEPARATOR = "__"  # <server>__<tool>
MAX_TOOL_NAME = 64  # what model providers accept
CLEANUP_GRACE = 5.0  # seconds a stopped call may take to close its session (stdio: stop the process) before it is abandoned
# Upper-case names only: a pasted token (mixed case) is refused by the admin instead of being taken for a name
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_PLACEHOLDER = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")
TOOL_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


class McpConfigError(Exception):
    """The server's registration cannot work as it stands: `str()` is for everyone, `staff_detail` for the admin."""

    def __init__(self, message: str, staff_detail: str = "") -> None:
        super().__init__(message)
        self.staff_detail = staff_detail or message


@dataclass(frozen=True)
class McpServerConfig:
    """What a call needs from a server row, frozen when the registry is built (no database access in a call)."""

    name: str
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    cwd: str = ""
    env: Mapping[str, str] = field(default_factory=dict)  # variable -> name (or ${NAME} template) in this environment
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)  # header -> name (or ${NAME} template)
    timeout: float = 30.0

    @classmethod
    def of(cls, server: McpServer) -> McpServerConfig:
        return cls(
            name=server.name, transport=server.transport, command=server.command, args=tuple(str(a) for a in server.args or ()),
            cwd=server.cwd, env=dict(server.env or {}), url=server.url, headers=dict(server.headers or {}), timeout=float(server.timeout),
        )


# ---- secrets from the environment ---------------------------------------------------------------


def env_template_names(value: str) -> list[str]:
    """The environment variable names a header or env value refers to: `NAME`, or each `${NAME}` of a template."""
    if _ENV_NAME.match(value):
        return [value]
    return _PLACEHOLDER.findall(value)


def env_template_problem(value: Any) -> str | None:
    """Why `value` is not a usable reference to environment variables (it might be a pasted secret), or None."""
    if not isinstance(value, str) or not value:
        return gettext("must be an environment variable name or a template such as 'Bearer ${API_TOKEN}'")
    if not env_template_names(value):
        return gettext("names no environment variable: write NAME or a template with ${NAME}, upper-case (never the secret itself)")
    return None


def env_template_resolve(value: str, *, environ: Mapping[str, str] | None = None) -> str:
    """The value with its environment variables filled in; a missing one raises McpConfigError naming it."""
    environ = os.environ if environ is None else environ
    missing = [n for n in env_template_names(value) if n not in environ]
    if missing:
        # users see that a variable is missing; only staff see its name (a mistyped secret must not reach a chat)
        raise McpConfigError("an environment variable it needs is not set",
                             f"environment variable {', '.join(missing)} is not set in the server process")
    if _ENV_NAME.match(value):
        return environ[value]
    return _PLACEHOLDER.sub(lambda m: environ[m.group(1)], value)


# ---- where an HTTP server may be ----------------------------------------------------------------


def mcp_allowed_networks() -> list[Network]:
    """CHAT_MCP_ALLOWED_NETWORKS as networks: the private, loopback or link-local ones an HTTP server may be at."""
    return networks(chat_settings.CHAT_MCP_ALLOWED_NETWORKS)


# ---- the SDK client -----------------------------------------------------------------------------


@asynccontextmanager
async def mcp_client(config: McpServerConfig) -> AsyncIterator[Client]:
    """An initialised SDK `Client` for the server (stdio: a process started for it; HTTP: a connection)."""
    from mcp import Client, StdioServerParameters

    async with AsyncExitStack() as stack:
        if config.transport == "stdio":
            if not config.command:
                raise McpConfigError("no command is set")
            env = {var: env_template_resolve(ref) for var, ref in config.env.items()}
            target: Any = StdioServerParameters(command=config.command, args=list(config.args), env=env or None, cwd=config.cwd or None)
        elif config.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            if not config.url:
                raise McpConfigError("no URL is set")
            # checked before anything is sent (a refused address is a clear error), then again by every connection
            # the client opens, to the address it checked: a name that resolves elsewhere later, or a redirect, is refused too
            allowed = mcp_allowed_networks()
            try:
                host, port = url_host(config.url)
            except ValueError as exc:
                raise McpConfigError(str(exc)) from None
            await resolve_allowed(host, port, allowed)
            headers = {name: env_template_resolve(ref) for name, ref in config.headers.items()}
            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(config.timeout), transport=guarded_transport(allowed)))
            target = streamable_http_client(config.url, http_client=http)
        else:
            raise McpConfigError(f"unknown transport {config.transport!r}")
        client = await stack.enter_async_context(Client(target, read_timeout_seconds=config.timeout))
        yield client


def leaf_error(exc: BaseException) -> BaseException:
    """The first real failure inside the SDK's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def failure_text(config: McpServerConfig, exc: BaseException, *, staff: bool = False) -> str:
    """A clear, secret-free sentence for a failed call or listing (no URL, header or exception text of the transport);
    `staff`: the admin's version, which may name a missing environment variable."""
    import httpx2
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
    from pydantic import ValidationError

    exc = leaf_error(exc)
    who = f"MCP server '{config.name}'"
    if isinstance(exc, McpConfigError):
        return f"{who} is not configured correctly: {exc.staff_detail if staff else exc}."
    if isinstance(exc, AddressRefused) and exc.unresolved:
        return f"{who} is unreachable (its host name does not resolve)."
    if isinstance(exc, AddressRefused):  # users are not told which internal address it was
        return (f"{who} is refused ({exc}): only public addresses, unless CHAT_MCP_ALLOWED_NETWORKS allows the network."
                if staff else f"{who} is refused: its address is not a public one.")
    if isinstance(exc, TimeoutError):
        return f"{who} did not answer within {config.timeout:g} s; the call was stopped."
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return f"{who} closed the connection (it stopped or crashed)."
    if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
        return f"{who} did not answer within {config.timeout:g} s; the call was stopped."
    if isinstance(exc, MCPError):
        return f"{who} answered with an error: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"{who} could not be started: its command was not found."
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"{who} answered HTTP {exc.response.status_code}."
    if isinstance(exc, httpx2.TimeoutException):
        return f"{who} did not answer within {config.timeout:g} s; the call was stopped."
    if isinstance(exc, httpx2.TransportError):
        return f"{who} is unreachable ({type(exc).__name__})."
    if isinstance(exc, ValidationError):
        return f"{who} sent a reply that is not valid MCP."
    if isinstance(exc, OSError):
        return f"{who} could not be started or reached ({type(exc).__name__})."
    return f"{who} failed ({type(exc).__name__})."


def result_text(result: Any) -> str:
    """The text of a CallToolResult: text parts, then a note per other part; structured content when there is no text."""
    parts: list[str] = []
    for block in result.content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            res = block.resource
            parts.append(getattr(res, "text", None) or f"[resource {res.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, default=str))
    return "\n".join(parts)


async def mcp_tools_list(config: McpServerConfig) -> list[dict[str, Any]]:
    """The server's tools as stored on its row: name, description, title, input schema, destructive hint; bounded by its timeout."""
    async with asyncio.timeout(config.timeout):
        async with mcp_client(config) as client:
            listed = await client.list_tools()
            tools = list(listed.tools)
            pages = 0
            while listed.next_cursor and pages < 50:  # a paginator that never ends cannot hang the listing
                listed = await client.list_tools(cursor=listed.next_cursor)
                tools += listed.tools
                pages += 1
    return [
        {
            "name": t.name,
            "description": t.description or t.title or "",
            # what people read for it: the tool's own title, else its annotations' (MCP puts it in either)
            "title": t.title or (t.annotations.title if t.annotations else None) or "",
            "input_schema": t.input_schema,
            "destructive": bool(t.annotations and t.annotations.destructive_hint and not t.annotations.read_only_hint),
        }
        for t in tools
    ]


async def mcp_tool_call(config: McpServerConfig, tool: str, arguments: dict[str, Any]) -> AsyncIterator[ToolProgress | ToolResult]:
    """Call one tool: yields its progress as it arrives, then one ToolResult (an error result for any failure).

    Bounded: after the server's timeout the call is stopped; a session that does not close within CLEANUP_GRACE
    more seconds is abandoned, so a server that is down or misbehaves never holds up the run."""
    updates: asyncio.Queue[ToolProgress] = asyncio.Queue()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        fraction = min(max(progress / total, 0.0), 1.0) if total else None
        updates.put_nowait(ToolProgress(stage="progress", message=message or "", progress=fraction,
                                        data={"progress": progress, "total": total}))

    async def call() -> Any:
        async with asyncio.timeout(config.timeout):
            async with mcp_client(config) as client:
                return await client.call_tool(tool, arguments, read_timeout_seconds=config.timeout, progress_callback=on_progress)

    task = asyncio.create_task(call())
    deadline = asyncio.get_running_loop().time() + config.timeout + CLEANUP_GRACE
    getter: asyncio.Future[ToolProgress] | None = None
    try:
        while not task.done():
            getter = asyncio.ensure_future(updates.get())
            remaining = deadline - asyncio.get_running_loop().time()
            done, _ = await asyncio.wait({task, getter}, timeout=max(remaining, 0), return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
                continue
            getter.cancel()
            if not done:  # the session did not close after being stopped: abandon it
                log.warning("MCP server %s: call of %s abandoned after %.0f s", config.name, tool, config.timeout + CLEANUP_GRACE)
                yield ToolResult(f"Error: {failure_text(config, TimeoutError())}", is_error=True)
                return
        while not updates.empty():
            yield updates.get_nowait()
        exc = task.exception()
        if exc is not None:
            log.warning("MCP server %s: call of %s failed: %s", config.name, tool, type(leaf_error(exc)).__name__)
            yield ToolResult(f"Error: {failure_text(config, exc)}", is_error=True)
            return
        result = task.result()
        text = result_text(result)
        if result.is_error:
            yield ToolResult(f"Error: the tool of MCP server '{config.name}' reported: {text or 'an error'}", is_error=True)
        else:
            yield ToolResult(text)
    finally:  # also when the run is cancelled while the call is under way
        if getter is not None and not getter.done():
            getter.cancel()
        if not task.done():
            task.cancel()
