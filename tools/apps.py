"""Tools app: autodiscovers `tools` modules and mirrors registered tools in the ORM after migrate."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ToolsConfig(AppConfig):
    name = "tools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from tools import checks  # noqa: F401  (registers system checks)
        from tools import builtin  # noqa: F401

        autodiscover_modules("tools")
        post_migrate.connect(_sync, sender=self)


def _sync(**kwargs: object) -> None:
    from tools.services import tool_rows_sync

    tool_rows_sync()
