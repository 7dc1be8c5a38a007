"""The chat core app (label `pagechat`, so a host's own `chat` app does not collide with it)."""
import atexit
import os

from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    label = "pagechat"
    verbose_name = "pagechat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat import checks, signals, tracing  # noqa: F401  (registers the settings checks and the logout signal)

        tracing.configure()  # OTLP export + Django/database spans, only with OTEL_EXPORTER_OTLP_ENDPOINT
        from django.apps import apps

        if apps.is_installed("django.contrib.admin"):
            from chat import admin_evals  # noqa: F401  (the eval sets' admin: chat.admin may not import chat.evals)
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from chat.metrics import mark_process_dead

            atexit.register(mark_process_dead)  # this process's live gauges (open sockets) stop counting
