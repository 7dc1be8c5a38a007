"""Staff views of the chat pages (read-only mirror) and the demo domain."""
from __future__ import annotations

from typing import Any

from django.contrib import admin

from pages.models import Article, ChatPage, Report, ResearchStream


@admin.register(ChatPage)
class ChatPageAdmin(admin.ModelAdmin):
    list_display = ["name", "registered", "tools", "payloads", "server_actions", "updated_at"]
    list_filter = ["registered"]
    readonly_fields = ["name", "identity", "tools", "payloads", "tabs", "client_actions", "server_actions", "registered", "updated_at"]

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(ResearchStream)
class ResearchStreamAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "report_frequency", "updated_at"]
    search_fields = ["name", "purpose", "owner__username"]


@admin.register(Article)
class ArticleAdmin(admin.ModelAdmin):
    list_display = ["external_id", "title", "journal", "published_date", "topic"]
    list_filter = ["topic"]
    search_fields = ["external_id", "title"]


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["title", "stream", "created_at"]
    search_fields = ["title"]
