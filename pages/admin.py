"""Staff view of the chat pages (a read-only mirror of the page registry)."""
from __future__ import annotations

from typing import Any

from django.contrib import admin

from pages.models import ChatPage


@admin.register(ChatPage)
class ChatPageAdmin(admin.ModelAdmin):
    list_display = ["name", "registered", "tools", "payloads", "server_actions", "updated_at"]
    list_filter = ["registered"]
    readonly_fields = ["name", "identity", "tools", "payloads", "tabs", "client_actions", "server_actions", "registered", "updated_at"]

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
