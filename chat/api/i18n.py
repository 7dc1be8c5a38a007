"""The tray's translations: Django's JavaScript catalog in the language the tray tag names."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.translation import check_for_language
from django.views.i18n import JavaScriptCatalog

from chat.prompt.languages import language_normalize


class TrayCatalog(JavaScriptCatalog):
    """The tray's translations (the `djangojs` domain of every installed app) for the language `?lang=` names: the
    page's language, which the tray tag puts in the URL, so the tray speaks it whatever negotiated this request."""

    domain = "djangojs"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        lang = language_normalize(request.GET.get("lang"))
        if lang is None or not check_for_language(lang):
            return super().get(request, *args, **kwargs)
        with translation.override(lang):
            return super().get(request, *args, **kwargs)
