"""{% chat_tray %} on a host page: with Django's CSP middleware (the nonce) and without it (no nonce attribute)."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.middleware.csp import ContentSecurityPolicyMiddleware
from django.template import Context, RequestContext, Template
from django.test import RequestFactory

pytestmark = pytest.mark.django_db  # the tag reads the page's group restriction (staff may set one in the admin)
TAG = Template('{% load chat_tags %}{% chat_tray page="reports" %}')
SCRIPT = re.compile(r'<script type="module" src="/static/chat/tray\.js"([^>]*)></script>')


class _User:
    is_authenticated = True
    is_staff = False

    def get_username(self) -> str:
        return "alice"


def _request(rf: RequestFactory, *, csp: bool) -> Any:
    request = rf.get("/host/page/")
    request.user = _User()
    if csp:
        ContentSecurityPolicyMiddleware(lambda r: None).process_request(request)
    return request


def _script_attrs(html: str) -> str:
    match = SCRIPT.search(html)
    assert match, html
    return match.group(1)


def test_without_csp_middleware_the_script_has_no_nonce(rf: RequestFactory) -> None:
    request = _request(rf, csp=False)
    html = TAG.render(RequestContext(request, {}))  # the csp context processor gives None here
    assert _script_attrs(html) == ""
    assert "nonce" not in html
    html = TAG.render(Context({"request": request, "user": request.user}))  # a host without that context processor
    assert _script_attrs(html) == ""


def test_with_csp_middleware_the_script_carries_the_request_nonce(rf: RequestFactory) -> None:
    request = _request(rf, csp=True)
    # Django's nonce is lazy (falsy until read): the tray must not mistake "not read yet" for "none".
    assert not request._csp_nonce
    html = TAG.render(RequestContext(request, {}))
    nonce = str(request._csp_nonce)
    assert nonce and _script_attrs(html) == f' nonce="{nonce}"'


def test_with_csp_middleware_but_no_context_processor_the_nonce_comes_from_the_request(rf: RequestFactory) -> None:
    request = _request(rf, csp=True)
    html = TAG.render(Context({"request": request, "user": request.user}))
    assert _script_attrs(html) == f' nonce="{request._csp_nonce}"'


def test_the_nonce_in_the_tag_is_the_one_in_the_response_header(rf: RequestFactory) -> None:
    from django.http import HttpResponse

    request = _request(rf, csp=True)
    middleware = ContentSecurityPolicyMiddleware(lambda r: HttpResponse(TAG.render(RequestContext(r, {}))))
    response = middleware(request)
    match = re.search(r' nonce="([^"]+)"', response.content.decode())
    assert match
    nonce = match.group(1)
    assert f"'nonce-{nonce}'" in response.headers["Content-Security-Policy"]
