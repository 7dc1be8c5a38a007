"""Staff tune tools: enable/disable, require approval, override the description; see use and performance."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Avg, Count, Q

from tools.models import Tool


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "requires_approval", "is_global", "registered", "calls", "errors", "mean_ms", "used_on"]
    list_editable = ["enabled", "requires_approval"]
    list_filter = ["enabled", "requires_approval", "is_global", "registered"]
    search_fields = ["name", "description", "description_override"]
    fields = ["name", "enabled", "requires_approval", "description", "description_override", "is_global", "module", "registered", "used_on", "updated_at"]
    readonly_fields = ["name", "description", "is_global", "module", "registered", "used_on", "updated_at"]

    def has_add_permission(self, request: Any) -> bool:
        return False

    def get_queryset(self, request: Any) -> Any:
        from chat.models import ToolCall

        qs = super().get_queryset(request)
        stats = {
            row["name"]: row
            for row in ToolCall.objects.values("name").annotate(n=Count("id"), e=Count("id", filter=Q(status="error")), avg=Avg("duration_ms"))
        }
        self._stats = stats
        return qs

    def _stat(self, obj: Tool, key: str) -> Any:
        return getattr(self, "_stats", {}).get(obj.name, {}).get(key)

    @admin.display(description="calls")
    def calls(self, obj: Tool) -> int:
        return self._stat(obj, "n") or 0

    @admin.display(description="errors")
    def errors(self, obj: Tool) -> int:
        return self._stat(obj, "e") or 0

    @admin.display(description="mean ms")
    def mean_ms(self, obj: Tool) -> str:
        avg = self._stat(obj, "avg")
        return f"{avg:.1f}" if avg is not None else "—"

    @admin.display(description="used on")
    def used_on(self, obj: Tool) -> str:
        from pages.registry import registry

        if obj.is_global:
            return "every page"
        return ", ".join(registry.where_used(tool=obj.name)) or "—"
