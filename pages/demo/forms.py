"""Forms of the demo site: create a stream, and one form per edit tab (semantic, retrieval, presentation).

Every widget has a stable id (`field-*`): page scripts fill these fields when the user accepts a chat proposal,
so the ids are part of the page's contract and must not change casually.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.functional import Promise
from django.utils.translation import gettext, gettext_lazy as _, gettext_noop

from pages.demo.models import Channel, ChannelType, ReportFrequency, ResearchStream

StrOrPromise = str | Promise  # a placeholder may be a lazy translation (rendered in the request's language)

MAX_LINES = 50
MAX_LINE_CHARS = 300


def _widget(field_id: str, *, rows: int | None = None, placeholder: StrOrPromise = "") -> dict[str, Any]:
    """Widget attrs with the stable id (and aria-describedby pointing at the help text rendered by _field.html)."""
    attrs: dict[str, Any] = {"id": field_id, "aria-describedby": f"{field_id}-help"}
    if rows:
        attrs["rows"] = rows
    if placeholder:
        attrs["placeholder"] = placeholder
    return attrs


def split_lines(text: str) -> list[str]:
    """Non-empty stripped lines of `text`, duplicates removed (first wins), order kept."""
    return list(dict.fromkeys(line.strip() for line in (text or "").splitlines() if line.strip()))


def _as_text(value: Any, render_item: Any) -> Any:
    """Textarea value for `value`: bound forms pass raw strings through, initial python values are rendered."""
    if value is None or isinstance(value, str):
        return value
    return "\n".join(render_item(item) for item in value)


class LinesField(forms.CharField):
    """A textarea holding one item per line; cleans to list[str]."""

    widget = forms.Textarea

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)  # splitting handles whitespace per line
        super().__init__(*args, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        """Render a list as lines."""
        return _as_text(value, str)

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]  # a list field stored as JSON
        """Split into lines and enforce the size bounds (the result is stored as JSON on the stream)."""
        if isinstance(value, list):
            return value
        lines = split_lines(super().to_python(value) or "")
        if len(lines) > MAX_LINES:
            raise ValidationError(_("At most %(max)d lines, please."), code="too_many", params={"max": MAX_LINES})
        too_long = [line for line in lines if len(line) > MAX_LINE_CHARS]
        if too_long:
            raise ValidationError(_("Each line must be at most %(max)d characters."), code="too_long", params={"max": MAX_LINE_CHARS})
        return self.parse_lines(lines)

    def parse_lines(self, lines: list[str]) -> Any:
        """Hook for structured line formats; plain lines by default."""
        return lines


class ChannelsField(LinesField):
    """'Name | type | keyword, keyword' per line; cleans to [{name, type, keywords}]."""

    def prepare_value(self, value: Any) -> Any:
        """Render channel dicts as lines."""
        return _as_text(value, lambda c: f"{c['name']} | {c['type']} | {', '.join(c.get('keywords') or [])}")

    def parse_lines(self, lines: list[str]) -> list[dict[str, Any]]:
        """Parse each line; the type defaults to scientific and must be one of ChannelType."""
        channels = []
        for number, line in enumerate(lines, start=1):
            parts = [part.strip() for part in line.split("|")]
            name = parts[0]
            kind = (parts[1] if len(parts) > 1 and parts[1] else ChannelType.SCIENTIFIC).lower()
            keywords = [k.strip() for k in parts[2].split(",") if k.strip()] if len(parts) > 2 else []
            if not name:
                raise ValidationError(_("Line %(number)d: a channel needs a name."), code="channel_name", params={"number": number})
            if kind not in ChannelType.values:
                allowed = ", ".join(ChannelType.values)
                raise ValidationError(_("Line %(number)d: type must be one of %(allowed)s."), code="channel_type",
                                      params={"number": number, "allowed": allowed})
            channels.append({"name": name[:200], "type": kind, "keywords": list(dict.fromkeys(keywords))})
        return channels


class FiltersField(LinesField):
    """'key: value' per line; cleans to a dict (integers and true/false are converted)."""

    def prepare_value(self, value: Any) -> Any:
        """Render a dict as 'key: value' lines."""
        if isinstance(value, dict):
            return "\n".join(f"{key}: {_render_filter_value(val)}" for key, val in value.items())
        return value

    def parse_lines(self, lines: list[str]) -> dict[str, Any]:
        """Parse 'key: value' lines; keys are normalised to snake_case."""
        filters: dict[str, Any] = {}
        for number, line in enumerate(lines, start=1):
            key, sep, raw = line.partition(":")
            key = "_".join(key.strip().lower().split())
            if not sep or not key:
                raise ValidationError(_("Line %(number)d: use 'key: value'."), code="filter_format", params={"number": number})
            filters[key] = _parse_filter_value(raw.strip())
        return filters


def _parse_filter_value(raw: str) -> Any:
    """'2020' -> 2020, 'true' -> True, 'a, b' -> ['a', 'b'], anything else stays a string."""
    if raw.lstrip("-").isdigit():
        return int(raw)
    if raw.lower() in {"true", "false"}:
        return raw.lower() == "true"
    if "," in raw:
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def _render_filter_value(value: Any) -> str:
    """Inverse of _parse_filter_value for display."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value)


class CategoriesField(LinesField):
    """'Name: description' per line; cleans to [{name, description}]."""

    def prepare_value(self, value: Any) -> Any:
        """Render category dicts as lines."""
        return _as_text(value, lambda c: f"{c['name']}: {c['description']}" if c.get("description") else c["name"])

    def parse_lines(self, lines: list[str]) -> list[dict[str, str]]:
        """Split each line on its first colon; the description may be empty."""
        categories = []
        for line in lines:
            name, _, description = line.partition(":")
            if name.strip():
                categories.append({"name": name.strip(), "description": description.strip()})
        return categories


# Shared field factories: the same field (and id) appears on the new-stream page and on the edit tabs.
def name_field() -> forms.CharField:
    """Stream name (#field-stream-name)."""
    return forms.CharField(
        label=_("Stream name"), max_length=200,
        widget=forms.TextInput(attrs=_widget("field-stream-name", placeholder="e.g. Lung Cancer Immunotherapy Monitor")),
        help_text=_("A short name you will recognise in lists and reports."),
    )


def purpose_field() -> forms.CharField:
    """Stream purpose (#field-purpose)."""
    return forms.CharField(
        label=_("Purpose"), required=False, max_length=2000,
        widget=forms.Textarea(attrs=_widget("field-purpose", rows=3, placeholder=_("What decision or question does this stream support?"))),
        help_text=_("Why you follow this area; the assistant uses it to suggest topics and queries."),
    )


def frequency_field() -> forms.ChoiceField:
    """Report frequency (#field-report-frequency)."""
    return forms.ChoiceField(
        label=_("Report frequency"), choices=ReportFrequency.choices, initial=ReportFrequency.WEEKLY,
        widget=forms.Select(attrs=_widget("field-report-frequency")),
        help_text=_("How often a report is produced."),
    )


def topics_field() -> LinesField:
    """Topics, one per line (#field-topics)."""
    return LinesField(
        label=_("Topics"), widget=forms.Textarea(attrs=_widget("field-topics", rows=6, placeholder=_("One topic per line"))),
        help_text=_("One topic per line, e.g. 'EGFR-mutant NSCLC'."),
    )


def channels_field() -> ChannelsField:
    """Channels (#field-channels)."""
    return ChannelsField(
        label=_("Channels"),
        widget=forms.Textarea(attrs=_widget("field-channels", rows=4, placeholder="Lung cancer trials | clinical | NSCLC, osimertinib")),
        help_text=_("One channel per line: name | type (scientific, clinical, regulatory, news) | comma-separated keywords."),
    )


class NewStreamForm(forms.Form):
    """Manual creation of a stream: basics, topics and optional channels."""

    name = name_field()
    purpose = purpose_field()
    report_frequency = frequency_field()
    topics = topics_field()
    channels = channels_field()

    def save(self, owner: Any) -> ResearchStream:
        """Create the stream (and its channels) for `owner` from cleaned data; call only when valid."""
        data = self.cleaned_data
        with transaction.atomic():
            stream = ResearchStream.objects.create(
                owner=owner,
                name=data["name"].strip(),
                purpose=data["purpose"].strip(),
                report_frequency=data["report_frequency"],
                semantic={"topics": data["topics"], "entities": [], "scope": ""},
            )
            Channel.objects.bulk_create(Channel(stream=stream, **channel) for channel in data["channels"])
        return stream


class StreamPartForm(forms.Form):
    """Base of the edit-tab forms: reads its part of a stream and writes it back."""

    tab: ClassVar[str]

    @classmethod
    def initial_for(cls, stream: ResearchStream) -> dict[str, Any]:
        """Initial field values from `stream`."""
        raise NotImplementedError

    def apply(self, stream: ResearchStream) -> None:
        """Write cleaned data into `stream` and save it (inside a transaction); call only when valid."""
        raise NotImplementedError


class SemanticForm(StreamPartForm):
    """Semantic space: what the stream is about."""

    tab = "semantic"
    name = name_field()
    purpose = purpose_field()
    report_frequency = frequency_field()
    topics = topics_field()
    entities = LinesField(
        label=_("Entities"), widget=forms.Textarea(attrs=_widget("field-entities", rows=4, placeholder=_("One per line"))),
        help_text=_("Drugs, genes, targets, organisations or trials to track, one per line."),
    )
    scope = forms.CharField(
        label=_("Scope"), required=False, max_length=2000,
        widget=forms.Textarea(attrs=_widget("field-scope", rows=2, placeholder=_("What is in and out of scope"))),
        help_text=_("Boundaries of the stream, e.g. 'adult patients; exclude case reports'."),
    )

    @classmethod
    def initial_for(cls, stream: ResearchStream) -> dict[str, Any]:
        """Name, purpose, frequency and the semantic JSON."""
        semantic = stream.semantic or {}
        return {
            "name": stream.name, "purpose": stream.purpose, "report_frequency": stream.report_frequency,
            "topics": semantic.get("topics") or [], "entities": semantic.get("entities") or [],
            "scope": semantic.get("scope") or "",
        }

    def apply(self, stream: ResearchStream) -> None:
        """Update the basics and replace the semantic JSON (keeping unknown keys other tools may have added)."""
        data = self.cleaned_data
        stream.name = data["name"].strip()
        stream.purpose = data["purpose"].strip()
        stream.report_frequency = data["report_frequency"]
        stream.semantic = {**(stream.semantic or {}), "topics": data["topics"], "entities": data["entities"],
                           "scope": data["scope"].strip()}
        stream.save()


class RetrievalForm(StreamPartForm):
    """Retrieval: how articles are found (queries, sources, filters, channels)."""

    tab = "retrieval"
    queries = LinesField(
        label=_("Search queries"), widget=forms.Textarea(attrs=_widget("field-queries", rows=6, placeholder=_("One query per line"))),
        help_text=_("One query per line, e.g. 'osimertinib resistance MET amplification'."),
    )
    sources = LinesField(
        label=_("Sources"), widget=forms.Textarea(attrs=_widget("field-sources", rows=3, placeholder="pubmed")),
        help_text=_("One source per line, e.g. pubmed, clinicaltrials.gov, fda, news."),
    )
    filters = FiltersField(
        label=_("Filters"), widget=forms.Textarea(attrs=_widget("field-filters", rows=3, placeholder="min_year: 2022")),
        help_text=_("One 'key: value' per line, e.g. 'min_year: 2022' or 'article_types: clinical trial, meta-analysis'."),
    )
    channels = channels_field()

    @classmethod
    def initial_for(cls, stream: ResearchStream) -> dict[str, Any]:
        """The retrieval JSON plus the stream's channels."""
        retrieval = stream.retrieval or {}
        return {
            "queries": retrieval.get("queries") or [], "sources": retrieval.get("sources") or [],
            "filters": retrieval.get("filters") or {}, "channels": [c.as_dict() for c in stream.channels.all()],
        }

    def apply(self, stream: ResearchStream) -> None:
        """Replace the retrieval JSON and the channel list."""
        data = self.cleaned_data
        with transaction.atomic():
            stream.retrieval = {**(stream.retrieval or {}), "queries": data["queries"], "sources": data["sources"],
                                "filters": data["filters"]}
            stream.save()
            stream.channels.all().delete()
            Channel.objects.bulk_create(Channel(stream=stream, **channel) for channel in data["channels"])


class PresentationForm(StreamPartForm):
    """Presentation: how report articles are grouped."""

    tab = "presentation"
    categories = CategoriesField(
        label=_("Report categories"),
        widget=forms.Textarea(attrs=_widget("field-categories", rows=8, placeholder="Clinical trials: Phase 2/3 results")),
        help_text=_("One category per line as 'Name: description'. Report articles are grouped under these headings."),
    )

    @classmethod
    def initial_for(cls, stream: ResearchStream) -> dict[str, Any]:
        """The presentation categories."""
        return {"categories": (stream.presentation or {}).get("categories") or []}

    def apply(self, stream: ResearchStream) -> None:
        """Replace the categories."""
        stream.presentation = {**(stream.presentation or {}), "categories": self.cleaned_data["categories"]}
        stream.save()


@dataclass(frozen=True)
class Tab:
    """One edit tab: its key (the ?tab= value and chat `active_tab`), title, blurb and form."""

    key: str
    title_text: str  # English, marked for the catalog; `title` and `blurb` are in the active language
    blurb_text: str
    form_class: type[StreamPartForm]

    @property
    def title(self) -> str:
        return gettext(self.title_text)

    @property
    def blurb(self) -> str:
        return gettext(self.blurb_text)


# Ordered lookup table of the edit tabs; views route by key, never by if/elif on names.
TABS: dict[str, Tab] = {
    tab.key: tab
    for tab in (
        Tab("semantic", gettext_noop("Semantic space"), gettext_noop("What the stream is about: its purpose, topics and the entities to track."),
            SemanticForm),
        Tab("retrieval", gettext_noop("Retrieval"), gettext_noop("How articles are found: search queries, sources, filters and channels."),
            RetrievalForm),
        Tab("presentation", gettext_noop("Presentation"), gettext_noop("How reports are organised: the categories articles are grouped under."),
            PresentationForm),
    )
}
DEFAULT_TAB = "semantic"
