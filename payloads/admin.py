"""Staff view of payload types: what exists, where pages use it, how often it was produced."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.translation import gettext, gettext_lazy as _

from chat.infra.display import pretty
from chat.infra.places import places_get
from payloads.models import PayloadType
from payloads.registry import registry


@admin.register(PayloadType)
class PayloadTypeAdmin(admin.ModelAdmin):
    list_display = ["type", "source", "parse_marker", "is_global", "registered", "used_on"]
    list_filter = ["source", "is_global", "registered"]
    search_fields = ["type", "description"]
    readonly_fields = ["type", "source", "parse_marker", "description", "is_global", "registered", "updated_at", "used_on", "instructions"]

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("used on pages"))
    def used_on(self, obj: PayloadType) -> str:
        return ", ".join(places_get().where_used(payload=obj.type)) or (gettext("every page") if obj.is_global else "—")

    @admin.display(description=_("instructions given to the model"))
    def instructions(self, obj: PayloadType) -> str:
        spec = registry.get(obj.type)
        return pretty(spec.instructions() if spec else gettext("(no longer registered)"))
