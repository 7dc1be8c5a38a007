"""{% chat_tray %} on a host page: with Django's CSP middleware (the nonce) and without it (no nonce attribute)."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.middleware.csp import ContentSecurityPolicyMiddleware
from django.template import Context, RequestContext, Template
from django.test import RequestFactory

from tests.fakes.users import TagUser

pytestmark = pytest.mark.django_db  # the tag reads the page's group restriction (staff may set one in the admin)
TAG = Template('{% load chat_tags %}{% chat_tray page="reports" %}')
SCRIPT = re.compile(r'<script type="module" src="/static/chat/tray\.js"([^>]*)></script>')




def _request(rf: RequestFactory, *, csp: bool) -> Any:
    request = rf.get("/host/page/")
    request.user = TagUser()
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


def test_the_tag_preloads_every_module_tray_js_imports_with_the_nonce(rf: RequestFactory) -> None:
    """Without preloads the browser learns of each level of imports a round trip after the one before."""
    from chat.templatetags.chat_tags import tray_modules

    modules = tray_modules()
    assert {"chat/controller.js", "chat/markdown.js", "chat/vendor/marked.esm.js", "chat/vendor/purify.es.js"} <= set(modules)
    assert not {"chat/tray.js", "chat/vendor/highlight.min.js", "chat/vendor/katex.min.js"} & set(modules)  # loaded on first use
    request = _request(rf, csp=True)
    html = TAG.render(RequestContext(request, {}))
    preloads = re.findall(r'<link rel="modulepreload" href="([^"]+)" nonce="([^"]+)">', html)
    assert [href for href, _ in preloads] == [f"/static/{m}" for m in modules]
    assert {nonce for _, nonce in preloads} == {str(request._csp_nonce)}
    assert html.index("modulepreload") < html.index('<script type="module"')


def test_preloads_follow_a_hashed_entry_modules_own_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a manifest storage that leaves imports as written, tray.js's hashed URL imports unhashed neighbours."""
    from chat.templatetags import chat_tags

    monkeypatch.setattr(chat_tags, "static", lambda path: "https://cdn.example/s/chat/tray.0123abcd.js")
    assert chat_tags.tray_preloads()[:2] == ["https://cdn.example/s/chat/pagechat.js", "https://cdn.example/s/chat/payloads.js"]
    assert "https://cdn.example/s/chat/vendor/marked.esm.js" in chat_tags.tray_preloads()


def test_only_static_imports_at_the_start_of_a_line_count() -> None:
    from chat.templatetags.chat_tags import _STATIC_IMPORT

    source = """/**
 *   import { registerPayloadRenderer } from "../chat/pagechat.js";  (a doc comment)
 */
import "./a.js";
import { one,
  two } from "./b.js";
import * as three from '../c/d.js';
export { four } from "./e.js";
const later = () => import("./lazy.js");
import { x } from "https://elsewhere.example/f.js";
"""
    assert _STATIC_IMPORT.findall(source) == ["./a.js", "./b.js", "../c/d.js", "./e.js"]
