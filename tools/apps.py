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
    from django.db.models.signals import m2m_changed, post_delete, post_save

    from chat import staff_settings
    from tools.models import McpServer, Tool

    for model in (Tool, McpServer, Group):
        post_save.connect(staff_settings.clear, sender=model, dispatch_uid=f"pagechat-staff-save-{model.__name__}")
        post_delete.connect(staff_settings.clear, sender=model, dispatch_uid=f"pagechat-staff-delete-{model.__name__}")
    for through in (Tool.groups.through, McpServer.groups.through):
        m2m_changed.connect(staff_settings.clear, sender=through, dispatch_uid=f"pagechat-staff-m2m-{through.__name__}")


def _sync(**kwargs: object) -> None:
    from tools.services import tool_rows_sync

    tool_rows_sync()
