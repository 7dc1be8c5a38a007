"""The chat core app (label `pagechat`, so a host's own `chat` app does not collide with it)."""
from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    label = "pagechat"
    verbose_name = "pagechat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat import checks, signals  # noqa: F401  (registers the settings checks and the logout signal)
