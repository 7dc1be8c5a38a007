"""Payloads app (label `pagechat_payloads`): system checks for payload types and their ORM mirror after migrate."""
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate


class PayloadsConfig(AppConfig):
    name = "payloads"
    label = "pagechat_payloads"
    verbose_name = "pagechat payload types"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        checks.register(check_payloads)
        post_migrate.connect(_sync, sender=self)


def check_payloads(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from payloads.registry import registry

    return [checks.Error(problem, id="payloads.E001") for problem in registry.check()]


def _sync(**kwargs: Any) -> None:
    from payloads.models import payload_rows_sync

    payload_rows_sync()
