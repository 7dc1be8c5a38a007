"""Writes and reads for tool rows (the staff-tunable mirror of the registry)."""
from __future__ import annotations

from dataclasses import dataclass

from chat.staff_settings import staff_setting
from tools.registry import ToolRegistry, registry as default_registry


@dataclass(frozen=True)
class ToolOverride:
    enabled: bool
    requires_approval: bool
    description: str


def tool_rows_sync(*, registry: ToolRegistry = default_registry) -> None:
    """Create/refresh a row per registered tool; mark rows whose tool left the code."""
    from tools.models import Tool

    names = set()
    for spec in registry:
        if spec.mcp_server:
            continue
        names.add(spec.name)
        row, created = Tool.objects.get_or_create(
            name=spec.name,
            defaults={"description": spec.description, "requires_approval": spec.requires_approval,
                      "is_global": spec.is_global, "module": spec.module, "permissions": list(spec.permissions)},
        )
        mirrored = (spec.description, spec.is_global, spec.module, True, list(spec.permissions))
        if not created and (row.description, row.is_global, row.module, row.registered, row.permissions) != mirrored:
            row.description, row.is_global, row.module, row.registered, row.permissions = mirrored
            row.save(update_fields=["description", "is_global", "module", "registered", "permissions", "updated_at"])
    # an MCP server's tools are mirrored when its tools are listed (tools/mcp.py), not from the code
    Tool.objects.exclude(name__in=names).exclude(module__startswith="mcp:").filter(registered=True).update(registered=False)


def tool_overrides() -> dict[str, ToolOverride]:
    """Staff settings by tool name (one query at most every CHAT_STAFF_SETTINGS_TTL; read-only)."""
    from tools.models import Tool

    return staff_setting("tools.overrides", lambda: {
        name: ToolOverride(enabled, approval, override)
        for name, enabled, approval, override in Tool.objects.values_list("name", "enabled", "requires_approval", "description_override")
    })
