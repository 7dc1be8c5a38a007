"""Tools app (label `pagechat_tools`): built-in tools, system checks, the ORM mirror of tools after migrate."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ToolsConfig(AppConfig):
    name = "tools"
    label = "pagechat_tools"
    verbose_name = "pagechat tools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tools import (
            builtin,  # noqa: F401
            checks,  # noqa: F401  (registers system checks)
        )

        post_migrate.connect(_sync, sender=self)
        _clear_staff_settings_on_change()


def _clear_staff_settings_on_change() -> None:
    """A tool's or MCP server's row, or a group, changed in this process: its cached staff settings go at once."""
    from django.contrib.auth.models import Group

    from chat.staff_settings import clear_on_change
    from tools.models import McpServer, Tool

    clear_on_change(Tool, McpServer, Group, m2m=(Tool.groups.through, McpServer.groups.through))


def _sync(**kwargs: object) -> None:
    from tools.services import tool_rows_sync

    tool_rows_sync()
