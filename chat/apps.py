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
        from chat import checks  # noqa: F401  (registers the settings checks)
        from chat.api import revocation  # noqa: F401  (logout and revoked credentials reach open sockets)
        from chat.infra import tracing
        from chat.userdata import files  # noqa: F401  (an attachment's files leave the storage with its row)

        tracing.configure()  # OTLP export + Django/database spans, only with OTEL_EXPORTER_OTLP_ENDPOINT
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from chat.infra.metrics import mark_process_dead

            atexit.register(mark_process_dead)  # this process's live gauges (open sockets) stop counting
