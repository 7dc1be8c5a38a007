"""Staff views of the demo domain: streams, articles, reports."""
from __future__ import annotations

from django.contrib import admin

from pages.demo.models import Article, Report, ResearchStream


@admin.register(ResearchStream)
class ResearchStreamAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "report_frequency", "updated_at"]
    search_fields = ["name", "purpose", "owner__username"]


@admin.register(Article)
class ArticleAdmin(admin.ModelAdmin):
    list_display = ["external_id", "title", "journal", "published_date", "topic"]
    list_filter = ["topic"]
    search_fields = ["external_id", "title"]


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["title", "stream", "created_at"]
    search_fields = ["title"]
