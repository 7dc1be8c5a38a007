"""{% chat_tray_head %}: the tray's style sheet and its open state in <head>, before the first paint (issue 37, item 2).
The browser side (no layout shift on any demo page) is tests/e2e/test_first_minutes_layout.py."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.middleware.csp import ContentSecurityPolicyMiddleware
from django.template import RequestContext, Template
from django.test import RequestFactory

from chat.templatetags.chat_tags import OPEN_STATE_SCRIPT
from tests.fakes.users import TagUser

pytestmark = pytest.mark.django_db  # the tags read the page's group restriction

HEAD_AND_TRAY = Template('{% load chat_tags %}<head>{% chat_tray_head page="reports" %}</head><body>{% chat_tray page="reports" %}</body>')
TRAY_ONLY = Template('{% load chat_tags %}{% chat_tray page="reports" %}')
STORE_JS = Path(__file__).resolve().parents[2] / "chat" / "static" / "chat" / "store.js"
HEAD_JS = Path(__file__).resolve().parents[2] / "chat" / "static" / OPEN_STATE_SCRIPT




def _request(rf: RequestFactory, user: Any, *, csp: bool = True) -> Any:
    request = rf.get("/reports/")
    request.user = user
    if csp:
        ContentSecurityPolicyMiddleware(lambda r: None).process_request(request)
    return request


def test_the_head_links_the_style_sheet_once_and_sets_the_open_state_with_the_nonce(rf: RequestFactory) -> None:
    request = _request(rf, TagUser())
    html = HEAD_AND_TRAY.render(RequestContext(request, {}))
    head, body = html.split("</head>")
    assert head.count('<link rel="stylesheet" href="/static/chat/tray.css">') == 1
    assert "tray.css" not in body  # linked in <head> already: the tray's own tag leaves it out
    script = re.search(r"<script src=\"([^\"]+)\" nonce=\"([^\"]+)\"></script>", head)  # a file: no inline script under the CSP
    assert script and script.group(1) == f"/static/{OPEN_STATE_SCRIPT}" and script.group(2) == str(request._csp_nonce)
    # without the head tag, the tray's tag links its style sheet itself, as before
    assert '<link rel="stylesheet" href="/static/chat/tray.css">' in TRAY_ONLY.render(RequestContext(_request(rf, TagUser()), {}))


def test_without_csp_the_head_script_has_no_nonce_and_an_anonymous_visitor_gets_nothing(rf: RequestFactory) -> None:
    html = HEAD_AND_TRAY.render(RequestContext(_request(rf, TagUser(), csp=False), {}))
    assert f'<script src="/static/{OPEN_STATE_SCRIPT}"></script>' in html
    assert HEAD_AND_TRAY.render(RequestContext(_request(rf, AnonymousUser()), {})) == "<head></head><body></body>"


def test_the_head_script_reads_the_key_the_tray_stores_its_state_under() -> None:
    key = re.search(r'export const STORAGE_KEY = "([^"]+)"', STORE_JS.read_text()).group(1)  # type: ignore[union-attr]
    script = HEAD_JS.read_text()
    assert f'sessionStorage.getItem("{key}")' in script
    assert "data-chat-tray-open" in script
