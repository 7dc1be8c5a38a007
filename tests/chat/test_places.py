"""The pages app hands its registry to the apps below it: tools' and payload types' admin pages show where pages
use them, and the MCP server form offers the registered pages, without importing the pages app."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chat.infra.places import places_get, places_set
from pages.registry import PageSpec, TabSpec, registry as pages


@pytest.fixture
def places_page() -> Iterator[None]:
    pages.register(PageSpec(name="places_page", tools=("places_tool",), tabs={"t": TabSpec("t", payloads=("places_x",))}))
    yield
    pages.unregister("places_page")


def test_the_page_registry_is_the_places_once_the_apps_are_ready() -> None:
    assert places_get() is pages


@pytest.mark.django_db
def test_admin_pages_show_where_pages_use_a_tool_and_offer_the_pages(admin_client: Any, places_page: None) -> None:
    from payloads.models import PayloadType
    from tools.models import Tool

    Tool.objects.create(name="places_tool", is_global=False)
    PayloadType.objects.get_or_create(type="places_x", defaults={"registered": False})
    assert "places_page" in admin_client.get("/admin/pagechat_tools/tool/").content.decode()
    assert "places_page/t" in admin_client.get("/admin/pagechat_payloads/payloadtype/").content.decode()
    form = admin_client.get("/admin/pagechat_tools/mcpserver/add/").content.decode()
    assert 'value="places_page"' in form


@pytest.mark.django_db
def test_without_the_pages_app_nothing_is_used_anywhere(admin_client: Any, places_page: None) -> None:
    from chat.infra.places import _Nowhere

    places_set(_Nowhere())
    try:
        assert places_get().page_names() == [] and places_get().where_used(tool="places_tool") == []
        assert 'value="places_page"' not in admin_client.get("/admin/pagechat_tools/mcpserver/add/").content.decode()
        assert admin_client.get("/admin/pagechat_tools/tool/").status_code == 200
    finally:
        places_set(pages)
    assert "places_page" in pages.page_names()
