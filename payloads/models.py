"""ORM mirror of registered payload types (code is the source of truth; staff see and describe them)."""
from __future__ import annotations

from django.db import models

from chat.infra.registration import rows_mirror


class PayloadType(models.Model):
    type = models.CharField(max_length=100, unique=True)
    source = models.CharField(max_length=8)
    parse_marker = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    is_global = models.BooleanField(default=False)
    registered = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["type"]

    def __str__(self) -> str:
        return self.type


def payload_rows_sync() -> None:
    """One row per registered payload type; rows whose type left the code are marked."""
    from payloads.registry import registry

    rows_mirror(PayloadType.objects.all(), "type", (
        (spec.type, {"source": spec.source, "parse_marker": spec.parse_marker or "", "description": spec.description,
                     "is_global": spec.is_global}) for spec in registry
    ))
