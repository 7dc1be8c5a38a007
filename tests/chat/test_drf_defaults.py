"""Every DRF view declares its own authentication and permission classes: a host's DRF defaults never open the API."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

ROOT = Path(__file__).resolve().parents[2]


def drf_views(patterns: list[Any]) -> list[type[APIView]]:
    found: list[type[APIView]] = []
    for p in patterns:
        if isinstance(p, URLResolver):
            found += drf_views(p.url_patterns)
        elif isinstance(p, URLPattern) and isinstance(getattr(p.callback, "cls", None), type) and issubclass(p.callback.cls, APIView):
            found.append(p.callback.cls)
    return found


def test_every_drf_view_of_the_api_declares_its_classes() -> None:
    views = drf_views(get_resolver("chat.urls").url_patterns)
    assert {v.__name__ for v in views} >= {"ChatView", "ConversationViewSet"}
    for view in views:
        declared = [c for c in view.__mro__ if c.__module__.startswith("chat.")]
        assert any("authentication_classes" in vars(c) for c in declared), view
        assert any("permission_classes" in vars(c) for c in declared), view


def test_allow_any_as_the_project_default_does_not_open_the_api() -> None:
    # A fresh process: DRF copies its defaults into view classes at import time, so only a process that
    # starts with AllowAny shows what a host with those defaults gets.
    code = """
import django, json
django.setup()
from django.test import Client
c = Client()
print(json.dumps([c.get("/api/conversations/").status_code, c.post("/api/chat", "{}", content_type="application/json").status_code,
                  c.get("/api/").status_code]))
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.chat.allowany_settings"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    conversations, chat, root = json.loads(out.stdout.strip().splitlines()[-1])
    assert conversations == 401 and chat == 401 and root == 200
