"""Staff view of the chat pages (a read-only mirror of the page registry, except the group restriction staff set)."""
from __future__ import annotations

from typing import Any

from django.contrib import admin

from pages.models import ChatPage


@admin.register(ChatPage)
class ChatPageAdmin(admin.ModelAdmin):
    list_display = ["name", "registered", "tools", "payloads", "server_actions", "permissions", "updated_at"]
    list_filter = ["registered", "groups"]
    fields = ["name", "groups", "permissions", "identity", "tools", "payloads", "tabs", "client_actions", "server_actions", "registered", "updated_at"]
    readonly_fields = ["name", "identity", "tools", "payloads", "tabs", "client_actions", "server_actions", "permissions", "registered", "updated_at"]
    filter_horizontal = ["groups"]

    def has_add_permission(self, request: Any) -> bool:
        return False
