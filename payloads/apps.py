"""Payloads app (label `pagechat_payloads`): the built-in payload types, system checks, their ORM mirror after migrate."""
from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PayloadsConfig(AppConfig):
    name = "payloads"
    label = "pagechat_payloads"
    verbose_name = "pagechat payload types"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat.infra.registration import discover
        from payloads import (
            builtin,  # noqa: F401  (the built-in tools' payload types)
            checks,  # noqa: F401  (registers system checks)
        )

        discover(self.name)  # the apps' `assistant` modules, once every registry app has its built-ins

        post_migrate.connect(_sync, sender=self)


def _sync(**kwargs: Any) -> None:
    from payloads.models import payload_rows_sync

    payload_rows_sync()
