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
        from payloads import builtin  # noqa: F401  (the built-in tools' payload types)

        checks.register(check_payloads)
        post_migrate.connect(_sync, sender=self)


def check_payloads(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from payloads.registry import registry

    return payload_problems(registry)


def payload_problems(registry: Any) -> list[checks.CheckMessage]:
    """Problems of the given payload registry (tests pass their own instance)."""
    errors: list[checks.CheckMessage] = [checks.Error(problem, id="payloads.E001") for problem in registry.check()]
    for refused in registry.refused:
        if refused.kind == "type":
            msg, cid = f"payload type {refused.name!r} is registered twice: in {refused.first} and in {refused.second}", "payloads.E002"
        elif refused.kind == "marker":
            msg, cid = f"marker {refused.name!r} is used twice: in {refused.first} and in {refused.second}", "payloads.E003"
        else:
            msg, cid = f"marker {refused.name!r} (in {refused.second}) is reserved for the built-in suggestions", "payloads.E004"
        errors.append(checks.Error(msg + " (the second is ignored)", hint="Payload types and markers are global: rename one.", id=cid))
    return errors


def _sync(**kwargs: Any) -> None:
    from payloads.models import payload_rows_sync

    payload_rows_sync()
