"""The demo site's domain: research streams (owned by a user), their channels, a shared article corpus and reports."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _


class ReportFrequency(models.TextChoices):
    """How often a stream produces a report."""

    DAILY = "daily", _("Daily")
    WEEKLY = "weekly", _("Weekly")
    BIWEEKLY = "biweekly", _("Biweekly")
    MONTHLY = "monthly", _("Monthly")


class ChannelType(models.TextChoices):
    """The kind of literature a channel watches."""

    SCIENTIFIC = "scientific", _("Scientific")
    CLINICAL = "clinical", _("Clinical")
    REGULATORY = "regulatory", _("Regulatory")
    NEWS = "news", _("News")


# JSON defaults are callables so that every row gets its own dict (a shared mutable default would leak edits).
def default_semantic() -> dict[str, Any]:
    """Empty semantic space: {topics: [str], entities: [str], scope: str}."""
    return {"topics": [], "entities": [], "scope": ""}


def default_retrieval() -> dict[str, Any]:
    """Empty retrieval config: {queries: [str], sources: [str], filters: {str: value}}."""
    return {"queries": [], "sources": [], "filters": {}}


def default_presentation() -> dict[str, Any]:
    """Empty presentation config: {categories: [{name, description}]}."""
    return {"categories": []}


class ResearchStreamQuerySet(models.QuerySet["ResearchStream"]):
    """Streams; views must always narrow with owned_by() so nobody sees another user's streams."""

    def owned_by(self, user: User | AnonymousUser) -> ResearchStreamQuerySet:
        """Streams whose owner is `user` (none for an anonymous user)."""
        if isinstance(user, AnonymousUser) or not user.is_authenticated:
            return self.none()
        return self.filter(owner=user)


class ResearchStream(models.Model):
    """A user's standing research question: what to watch (semantic), how to find it (retrieval), how to report it."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="research_streams")
    name = models.CharField(max_length=200)
    purpose = models.TextField(blank=True)
    report_frequency = models.CharField(
        max_length=16, choices=ReportFrequency.choices, default=ReportFrequency.WEEKLY
    )
    semantic = models.JSONField(default=default_semantic, blank=True)
    retrieval = models.JSONField(default=default_retrieval, blank=True)
    presentation = models.JSONField(default=default_presentation, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ResearchStreamQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="stream_owner_updated")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        """The stream's edit page (semantic tab)."""
        return reverse("pages:stream_edit", args=[self.pk])

    # The helpers below read the JSON defensively: rows edited in the admin or by tools may lack keys.
    @property
    def topics(self) -> list[str]:
        """Semantic topics, always a list."""
        return list((self.semantic or {}).get("topics") or [])

    @property
    def queries(self) -> list[str]:
        """Retrieval queries, always a list."""
        return list((self.retrieval or {}).get("queries") or [])

    @property
    def categories(self) -> list[dict[str, str]]:
        """Presentation categories, always a list of {name, description}."""
        return list((self.presentation or {}).get("categories") or [])

    def as_schema(self) -> dict[str, Any]:
        """JSON-ready snapshot of the whole stream: the `current_schema` the chat sees on the edit page."""
        semantic = {**default_semantic(), **(self.semantic or {})}
        retrieval = {**default_retrieval(), **(self.retrieval or {})}
        presentation = {**default_presentation(), **(self.presentation or {})}
        return {
            "stream_id": self.pk,
            "stream_name": self.name,
            "purpose": self.purpose,
            "report_frequency": self.report_frequency,
            "semantic": semantic,
            "retrieval": retrieval,
            "presentation": presentation,
            "channels": [channel.as_dict() for channel in self.channels.all()],
        }


class Channel(models.Model):
    """One monitored slice of a stream (e.g. 'Lung cancer trials', clinical, [NSCLC, osimertinib])."""

    stream = models.ForeignKey(ResearchStream, on_delete=models.CASCADE, related_name="channels")
    name = models.CharField(max_length=200)
    # Named `type` to match the create_stream action data shape ({name, type, keywords}).
    type = models.CharField(max_length=16, choices=ChannelType.choices, default=ChannelType.SCIENTIFIC)
    keywords = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.type})"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready {name, type, keywords}."""
        return {"name": self.name, "type": self.type, "keywords": list(self.keywords or [])}


class Article(models.Model):
    """One paper of the shared corpus (not owned: every signed-in user may read every article)."""

    external_id = models.CharField(max_length=32, unique=True, help_text="PMID-like identifier")
    title = models.CharField(max_length=500)
    abstract = models.TextField()
    journal = models.CharField(max_length=200)
    authors = models.JSONField(default=list, blank=True)
    published_date = models.DateField()
    keywords = models.JSONField(default=list, blank=True)
    topic = models.CharField(max_length=64, db_index=True)

    class Meta:
        ordering = ["-published_date", "external_id"]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.title}"

    def get_absolute_url(self) -> str:
        """The article detail page."""
        return reverse("pages:article_detail", args=[self.external_id])

    @property
    def author_line(self) -> str:
        """'A, B, C et al.' style byline (first three authors)."""
        names = list(self.authors or [])
        line = ", ".join(names[:3])
        return f"{line} et al." if len(names) > 3 else line

    def as_card(self) -> dict[str, Any]:
        """JSON-ready summary used in chat contexts and article cards."""
        return {
            "external_id": self.external_id,
            "title": self.title,
            "journal": self.journal,
            "published_date": self.published_date.isoformat(),
            "authors": list(self.authors or []),
            "topic": self.topic,
            "keywords": list(self.keywords or []),
        }


class ReportQuerySet(models.QuerySet["Report"]):
    """Reports; a report belongs to whoever owns its stream."""

    def owned_by(self, user: User | AnonymousUser) -> ReportQuerySet:
        """Reports of streams owned by `user` (none for an anonymous user)."""
        if isinstance(user, AnonymousUser) or not user.is_authenticated:
            return self.none()
        return self.filter(stream__owner=user)


class Report(models.Model):
    """A dated digest produced for a stream, listing the articles it selected."""

    stream = models.ForeignKey(ResearchStream, on_delete=models.CASCADE, related_name="reports")
    title = models.CharField(max_length=300)
    created_at = models.DateTimeField(auto_now_add=True)
    summary = models.TextField(blank=True)
    articles = models.ManyToManyField(Article, related_name="reports", blank=True)

    objects = ReportQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        """The report detail page."""
        return reverse("pages:report_detail", args=[self.pk])
