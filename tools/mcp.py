"""MCP tool servers in the registry: listing a server's tools (`mcp_server_refresh`, on save and by an admin action)
stores them on the row; every turn `mcp_tools_register` brings this process's registry in step with the rows (one
query; a change in the admin applies to the next turn in every process, no restart). Each tool is a `ToolSpec` named
`<server>__<tool>` whose async executor calls it through tools/mcp_client.py.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chat.agent.types import ToolContext, ToolProgress, ToolResult
from chat.infra.registration import title_from_name
from chat.infra.staff_settings import staff_setting
from tools.registry import ToolRegistry, registry as default_registry
from tools.spec import ToolSpec

if TYPE_CHECKING:

    from tools.models import McpServer

from tools.mcp_client import MAX_TOOL_NAME, SEPARATOR, TOOL_NAME_CHARS, McpServerConfig, failure_text, leaf_error, mcp_tool_call, mcp_tools_list

log = logging.getLogger(__name__)


def tool_name(server: str, tool: str) -> str:
    """The registry name of a server's tool: `<server>__<tool>`, in the characters and length providers accept."""
    return (server + SEPARATOR + TOOL_NAME_CHARS.sub("_", tool))[:MAX_TOOL_NAME]


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
        log.warning("MCP server %s: listing tools failed: %s", server.name, type(leaf_error(exc)).__name__)
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
