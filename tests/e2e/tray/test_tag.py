"""Browser tests of the tray against the scripted fake protocol server: the `{% chat_tray %}` tag's config and assets (no browser).

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import re
from typing import Any

import pytest

from tests.fakes.users import TagUser

pytestmark = pytest.mark.e2e


@pytest.mark.django_db  # the tag checks the page's access (group restrictions are rows)
def test_template_tag_renders_config_and_assets(rf: Any, settings: Any) -> None:
    import json

    from django.contrib.auth.models import AnonymousUser
    from django.middleware.csp import ContentSecurityPolicyMiddleware
    from django.template import RequestContext, Template

    class Staff(TagUser):
        is_staff = True

    settings.CHAT_PROVIDER = "chat.providers.does_not_exist.Provider"
    request = rf.get("/reports/")
    request.user = Staff()
    ContentSecurityPolicyMiddleware(lambda r: None).process_request(request)
    tpl = Template('{% load chat_tags %}{% chat_tray page="reports" context=ctx %}')
    html = tpl.render(RequestContext(request, {"ctx": {"report_id": 3, "evil": "</script>"}}))
    assert '<div id="chat-tray" data-chat-tray></div>' in html
    assert 'href="/static/chat/tray.css"' in html
    assert f'<script type="module" src="/static/chat/tray.js" nonce="{request._csp_nonce}">' in html
    assert "</script>\"" not in html  # json_script escapes the page context
    assert "{#" not in html and "{%" not in html  # no template comment leaks onto the host's page as text
    config = json.loads(re.search(r'<script id="chat-tray-config" type="application/json">(.*?)</script>', html).group(1))
    assert config["page"] == "reports"
    assert config["context"] == {"report_id": 3, "evil": "</script>", "current_page": "reports"}
    assert config["ws_url"] == "/api/ws/" and config["api_base"] == "/api/"
    assert config["is_staff"] is True and config["user"] == "alice" and config["offline"] is False
    assert config["csrf_token"]

    settings.CHAT_PROVIDER = "chat.providers.base.Provider"
    request.user = AnonymousUser()
    assert tpl.render(RequestContext(request, {"ctx": {}})).strip() == ""
