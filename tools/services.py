"""Writes and reads for tool rows (the staff-tunable mirror of the registry)."""
from __future__ import annotations

from dataclasses import dataclass

from chat.infra.registration import rows_mirror
from chat.infra.staff_settings import staff_setting
from tools.registry import ToolRegistry, registry as default_registry


@dataclass(frozen=True)
class ToolOverride:
    enabled: bool
    requires_approval: bool
    description: str


def tool_rows_sync(*, registry: ToolRegistry = default_registry) -> None:
    """Create/refresh a row per registered tool; mark rows whose tool left the code."""
    from tools.models import Tool

    # an MCP server's tools are mirrored when its tools are listed (tools/mcp.py), not from the code
    specs = [spec for spec in registry if not spec.mcp_server]
    rows_mirror(Tool.objects.exclude(module__startswith="mcp:"), "name", (
        (spec.name, {"description": spec.description, "is_global": spec.is_global, "module": spec.module,
                     "permissions": list(spec.permissions)}) for spec in specs
    ), created={spec.name: {"requires_approval": spec.requires_approval} for spec in specs})  # then staff's to tune


def tool_overrides() -> dict[str, ToolOverride]:
    """Staff settings by tool name (one query at most every CHAT_STAFF_SETTINGS_TTL; read-only)."""
    from tools.models import Tool

    return staff_setting("tools.overrides", lambda: {
        name: ToolOverride(enabled, approval, override)
        for name, enabled, approval, override in Tool.objects.values_list("name", "enabled", "requires_approval", "description_override")
    })
