"""The chat core app."""
from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat import checks, signals  # noqa: F401  (registers the settings checks and the logout signal)
