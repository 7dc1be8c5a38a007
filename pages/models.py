"""ORM mirror of the registered chat pages (code is the source of truth; staff see what each page offers)."""
from __future__ import annotations

from django.db import models

from chat.infra.registration import rows_mirror


class ChatPage(models.Model):
    """ORM mirror of a registered chat page (code is the source of truth; staff see what each page offers)."""

    name = models.CharField(max_length=100, unique=True)
    identity = models.TextField(blank=True)
    tools = models.JSONField(default=list, blank=True)
    payloads = models.JSONField(default=list, blank=True)
    tabs = models.JSONField(default=dict, blank=True)
    client_actions = models.JSONField(default=list, blank=True)
    server_actions = models.JSONField(default=list, blank=True)
    registered = models.BooleanField(default=True)
    permissions = models.JSONField(default=list, blank=True, help_text="Django permissions the code requires (all of them).")
    groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="+",
        help_text="When set, only members of these groups (and superusers) may chat on this page. Takes effect on the next turn.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def chat_page_rows_sync() -> None:
    """One row per registered page, refreshed after migrate; rows whose page left the code are marked."""
    from pages.registry import registry

    rows_mirror(ChatPage.objects.all(), "name", ((page.name, {
        "identity": page.identity, "tools": list(page.tools), "payloads": list(page.payloads),
        "tabs": {t.name: {"tools": list(t.tools), "payloads": list(t.payloads), "subtabs": sorted(t.subtabs)} for t in page.tabs.values()},
        "client_actions": [a.action for a in page.client_actions], "server_actions": [a.action for a in page.server_actions],
        "permissions": list(page.permissions),
    }) for page in registry))
