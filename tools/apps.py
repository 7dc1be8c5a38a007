"""Tools app (label `pagechat_tools`): built-in tools, system checks, the ORM mirror of tools after migrate."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ToolsConfig(AppConfig):
    name = "tools"
    label = "pagechat_tools"
    verbose_name = "pagechat tools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat.infra.registration import discover
        from tools import (
            builtin,  # noqa: F401
            checks,  # noqa: F401  (registers system checks)
        )
        from tools.sources import checks as source_checks  # noqa: F401  (registers the sources' system checks)

        discover(self.name)  # the apps' `assistant` modules, once every registry app has its built-ins

        post_migrate.connect(_sync, sender=self)
        post_migrate.connect(_sources_sync, sender=self)
        _clear_staff_settings_on_change()


def _clear_staff_settings_on_change() -> None:
    """A tool's or MCP server's row, or a group, changed in this process: its cached staff settings go at once."""
    from django.contrib.auth.models import Group

    from chat.infra.staff_settings import clear_on_change
    from tools.models import McpServer, Tool

    clear_on_change(Tool, McpServer, Group, m2m=(Tool.groups.through, McpServer.groups.through))


def _sync(**kwargs: object) -> None:
    from tools.services import tool_rows_sync

    tool_rows_sync()


def _sources_sync(using: str = "default", **kwargs: object) -> None:
    """After migrate (post_migrate is sent once every app is migrated): the sources' index tables exist and an empty index is filled (data migrations
    write without signals). Sources are registered by the `assistant` modules, imported before migrate runs."""
    from tools.sources.index import sources_sync
    from tools.sources.registry import registry

    sources_sync(registry, using=using)
