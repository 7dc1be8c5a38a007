"""What the chat admin's pages share: read-only views, run timings, the latest rows of a long inline, amounts in USD."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext_lazy as _

from chat.models import Run


def seconds(ms: float | None) -> str:
    """A duration for people: "0.42 s", "12.3 s", "—" when unknown (milliseconds are stored unrounded)."""
    if ms is None:
        return "—"
    return f"{ms / 1000:.2f} s" if ms < 10_000 else f"{ms / 1000:.1f} s"


class RunTimes:
    """Rounded timings of a run for lists, inlines and the detail page."""

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration(self, obj: Run) -> str:
        return seconds(obj.duration_ms)

    @admin.display(description=_("first token"), ordering="time_to_first_token_ms")
    def first_token(self, obj: Run) -> str:
        return seconds(obj.time_to_first_token_ms)


class ReadOnlyMixin:
    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


INLINE_ROWS = 50  # a conversation's page lists its latest messages and runs, at most this many of each


class LatestRowsFormSet(BaseInlineFormSet):
    """An inline of the latest INLINE_ROWS rows, oldest first: a conversation of thousands of messages is a page of
    a known size (the message and run lists, filtered by conversation, have all of them)."""

    def get_queryset(self) -> QuerySet[Any]:
        if not hasattr(self, "_latest"):
            rows = super().get_queryset()
            self._latest = rows.filter(pk__in=list(rows.order_by("-pk").values_list("pk", flat=True)[:INLINE_ROWS])).order_by("pk")
        latest: QuerySet[Any] = self._latest
        return latest


def usd(value: Any) -> str:
    """An amount in US dollars to six places; a dash when unknown (never shown as free)."""
    return "—" if value is None else f"{value:.6f}"
