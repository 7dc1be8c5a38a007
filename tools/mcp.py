"""MCP tool servers (the official `mcp` SDK): list a server's tools into the registry, call them in a turn.

Staff register a server in the admin (`tools.models.McpServer`). Listing its tools (`mcp_server_refresh`, on save
and by an admin action) stores them on the row; every turn `mcp_tools_register` brings this process's registry in
step with the rows (one query; a change in the admin applies to the next turn in every process, no restart).
Each tool is a `ToolSpec` named `<server>__<tool>` whose async executor opens a session per call, bounded by the
server's timeout, streams the server's progress notifications as `ToolProgress`, and turns every failure into a
clear tool error. Secrets are read from the environment at each call and never stored, logged or shown.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from chat.agent.types import ToolContext, ToolProgress, ToolResult
from chat.conf import chat_settings
from chat.infra.registration import title_from_name
from chat.infra.staff_settings import staff_setting
from tools.addresses import AddressRefused, Network, guarded_transport, networks, resolve_allowed, url_host
from tools.registry import ToolRegistry, registry as default_registry
from tools.spec import ToolSpec

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
_TOOL_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


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


def _leaf(exc: BaseException) -> BaseException:
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

    exc = _leaf(exc)
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
            log.warning("MCP server %s: call of %s failed: %s", config.name, tool, type(_leaf(exc)).__name__)
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


# ---- the registry -------------------------------------------------------------------------------


def tool_name(server: str, tool: str) -> str:
    """The registry name of a server's tool: `<server>__<tool>`, in the characters and length providers accept."""
    return (server + SEPARATOR + _TOOL_NAME_CHARS.sub("_", tool))[:MAX_TOOL_NAME]


def _executor(config: McpServerConfig, tool: str) -> Callable[..., AsyncIterator[ToolProgress | ToolResult]]:
    async def run(tool_input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolProgress | ToolResult]:
        async for item in mcp_tool_call(config, tool, tool_input):
            yield item
    run.__qualname__ = run.__name__ = f"mcp_{config.name}_{tool}"
    return run


def server_specs(server: McpServer) -> list[ToolSpec]:
    """The registry's specs of a server's listed tools (approval as the server says; always for a destructive one)."""
    config = McpServerConfig.of(server)
    specs: dict[str, ToolSpec] = {}
    for listed in server.tools or ():
        name = tool_name(server.name, str(listed.get("name", "")))
        schema = listed.get("input_schema")
        problems: tuple[str, ...] = ()
        if name in specs:
            problems = (f"MCP tool {listed.get('name')!r} has the same registry name as another tool of the server",)
        if not isinstance(schema, dict) or schema.get("type") != "object":
            schema = {"type": "object", "properties": {}}
            problems += ("the MCP tool's input schema is not a JSON object schema",)
        description = str(listed.get("description") or "").strip() or f"Tool {listed.get('name')} of MCP server {server.name}."
        specs.setdefault(name, ToolSpec(
            name=name, description=description, input_schema=schema, executor=_executor(config, str(listed["name"])),
            is_global=server.on_every_page, requires_approval=server.require_approval, streaming=True,
            changes_data=bool(listed.get("destructive")), module=f"mcp:{server.name}", tags=("mcp",),
            problems=problems, mcp_server=server.name,
            # the server's title, else one derived from the tool's own name (not the registry's `<server>__<tool>`)
            title=" ".join(str(listed.get("title") or "").split())[:200] or title_from_name(str(listed.get("name", ""))),
        ))
    return list(specs.values())


class McpRegistration:
    """What this process has registered from the McpServer rows; rebuilt when a row changes (checked every turn, read at most every CHAT_STAFF_SETTINGS_TTL)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fingerprints: dict[int, tuple[Any, ...]] = {}
        self.names: dict[int, list[str]] = {}  # registry -> names it holds from the servers
        self.pages: dict[int, dict[str, list[str]]] = {}  # registry -> page -> tool names

    def sync(self, registry: ToolRegistry) -> dict[str, list[str]]:
        """Register the enabled servers' tools, unregister what left; returns page name -> MCP tool names."""
        from tools.models import McpServer

        key = id(registry)
        fingerprint = staff_setting("tools.mcp_servers", lambda: tuple(McpServer.objects.order_by("pk").values_list("pk", "updated_at")))
        with self._lock:
            if self._fingerprints.get(key) == fingerprint:
                return self.pages.get(key, {})
            servers = list(McpServer.objects.filter(enabled=True))
            for name in self.names.get(key, []):
                registry.unregister(name)
            names: list[str] = []
            pages: dict[str, list[str]] = {}
            for server in servers:
                for spec in server_specs(server):
                    if spec.name in registry:  # a code tool keeps its name
                        log.warning("MCP server %s: tool %s is not registered, a tool of that name exists", server.name, spec.name)
                        continue
                    registry.register(spec, origin=f"MCP server {server.name}")
                    names.append(spec.name)
                    for page in server.pages or ():
                        pages.setdefault(str(page), []).append(spec.name)
            self.names[key], self.pages[key], self._fingerprints[key] = names, pages, fingerprint
            return pages


_registration = McpRegistration()


def mcp_tools_register(*, registry: ToolRegistry = default_registry) -> dict[str, list[str]]:
    """Bring `registry` in step with the MCP server rows (one query when nothing changed); page -> tool names."""
    return _registration.sync(registry)


def mcp_page_tool_names(*, page: str, registry: ToolRegistry = default_registry) -> list[str]:
    """The MCP tools staff enabled on `page` (servers offered on every page are global specs instead)."""
    return list(mcp_tools_register(registry=registry).get(page, []))


# ---- services -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class McpRefresh:
    """The outcome of listing a server's tools: their registry names, or why it failed."""

    server: str
    tools: list[str]
    error: str = ""


def mcp_server_refresh(*, server: McpServer) -> McpRefresh:
    """List the server's tools now (blocking, bounded by its timeout), store them on the row and mirror them as Tool rows.

    A failed listing keeps the tools listed before and records why (shown in the admin)."""
    from asgiref.sync import async_to_sync
    from django.utils import timezone

    config = McpServerConfig.of(server)
    try:
        listed = async_to_sync(mcp_tools_list)(config)
    except Exception as exc:
        server.tools_error = failure_text(config, exc, staff=True)
        log.warning("MCP server %s: listing tools failed: %s", server.name, type(_leaf(exc)).__name__)
    else:
        server.tools, server.tools_error = listed, ""
    server.tools_refreshed_at = timezone.now()
    server.save(update_fields=["tools", "tools_error", "tools_refreshed_at", "updated_at"])
    mcp_tool_rows_sync(server=server)
    names = [tool_name(server.name, str(t.get("name", ""))) for t in server.tools or ()]
    return McpRefresh(server=server.name, tools=names, error=server.tools_error)


def mcp_tool_rows_sync(*, server: McpServer, approval_changed: bool = False) -> None:
    """The ORM mirror: a Tool row per listed tool of the server (staff enable, describe, restrict each one);
    rows of tools the server no longer lists are marked unregistered. `approval_changed`: the server's approval
    setting was just changed, so its tools' rows take it."""
    from tools.models import Tool

    specs = server_specs(server)
    module = f"mcp:{server.name}"
    for spec in specs:
        row, created = Tool.objects.get_or_create(name=spec.name, defaults={
            "description": spec.description, "requires_approval": spec.requires_approval, "is_global": spec.is_global, "module": module,
        })
        mirrored = (spec.description, spec.is_global, module, True)
        if not created and (row.description, row.is_global, row.module, row.registered) != mirrored:
            row.description, row.is_global, row.module, row.registered = mirrored
            row.save(update_fields=["description", "is_global", "module", "registered", "updated_at"])
    rows = Tool.objects.filter(module=module)
    rows.exclude(name__in=[s.name for s in specs]).filter(registered=True).update(registered=False)
    if approval_changed:
        rows.update(requires_approval=server.require_approval)


def mcp_server_rows_forget(*, names: Iterable[str]) -> None:
    """Mark the Tool rows of deleted servers unregistered."""
    from tools.models import Tool

    Tool.objects.filter(module__in=[f"mcp:{n}" for n in names]).update(registered=False)
