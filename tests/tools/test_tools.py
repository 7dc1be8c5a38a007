"""Tool specs from typed functions, the registry, its ORM mirror and the admin."""
from __future__ import annotations

from typing import Any, Literal

import pytest

from chat.agent.types import ToolContext
from tools.registry import ToolRegistry
from tools.spec import spec_from_function


def test_schema_and_description_come_from_signature_and_docstring() -> None:
    reg = ToolRegistry()

    @reg.tool(is_global=True)
    def find(query: str, limit: int = 5, kind: Literal["a", "b"] = "a", *, ctx: ToolContext) -> str:
        """Find things by keywords."""
        return f"{query}:{limit}:{kind}:{ctx.run_id}"

    spec = reg.get("find")
    assert spec is not None and spec.description == "Find things by keywords." and spec.is_global
    schema = spec.input_schema
    assert schema["type"] == "object" and schema["required"] == ["query"]
    assert schema["properties"]["limit"]["default"] == 5 and schema["properties"]["kind"]["enum"] == ["a", "b"]
    assert "ctx" not in schema["properties"] and schema["additionalProperties"] is False
    assert spec.executor({"query": "x"}, ToolContext(run_id="r1")) == "x:5:a:r1"
    with pytest.raises(Exception):
        spec.executor({"query": "x", "limit": "not a number"}, ToolContext())
    with pytest.raises(Exception):
        spec.executor({"query": "x", "evil": 1}, ToolContext())


def test_mistakes_do_not_raise_at_import_but_are_carried_for_the_checks() -> None:
    def undocumented(x: int) -> str:
        return ""

    def unannotated(query, limit: int = 5) -> str:  # type: ignore[no-untyped-def]
        """Search."""
        return ""

    assert spec_from_function(undocumented).description == ""
    spec = spec_from_function(unannotated)
    assert spec.problems and "'query' has no type annotation" in spec.problems[0]
    reg = ToolRegistry()
    reg.register(spec)
    assert reg.resolve(["unannotated"]) == []  # never offered to the model


def test_resolve_orders_globals_first_and_skips_disabled_and_unknown() -> None:
    reg = ToolRegistry()
    for name, is_global in (("g", True), ("p", False), ("t", False)):
        reg.register(spec_from_function(lambda: "", name=name, description=name, is_global=is_global))
    assert [s.name for s in reg.resolve(["p", "t", "p", "nope"])] == ["g", "p", "t"]
    assert [s.name for s in reg.resolve(["p", "t"], disabled={"g", "t"})] == ["p"]


@pytest.mark.django_db
def test_orm_mirrors_registries_after_migrate() -> None:
    from pages.models import ChatPage
    from payloads.models import PayloadType
    from tools.models import Tool

    assert Tool.objects.filter(name="search_articles", registered=True).exists()
    assert Tool.objects.get(name="calculate").is_global
    assert PayloadType.objects.get(type="research_stream_form").parse_marker == "RESEARCH_STREAM_FORM:"
    page = ChatPage.objects.get(name="edit_research_stream")
    assert page.tabs["retrieval"]["tools"] == ["preview_query"]


@pytest.mark.django_db
def test_admin_pages_render_for_staff(admin_client: Any, django_user_model: Any) -> None:
    from chat.models import Conversation, Message, Run, ToolCall

    owner = django_user_model.objects.create_user("owner", password="x")
    conv = Conversation.objects.create(owner=owner, title="<script>alert(1)</script>")
    run = Run.objects.create(conversation=conv, status="completed", provider="offline",
                             diagnostics={"system_prompt": "# IDENTITY\n<b>x</b>", "tools": ["calculate"], "messages": [], "raw_llm_response": []})
    Message.objects.create(conversation=conv, role="assistant", content="hi", run=run)
    ToolCall.objects.create(run=run, index=0, tool_use_id="t1", name="calculate", duration_ms=3.0)
    for url in ["/admin/pagechat/conversation/", f"/admin/pagechat/conversation/{conv.pk}/change/", "/admin/pagechat/run/",
                f"/admin/pagechat/run/{run.pk}/change/", "/admin/pagechat_tools/tool/", "/admin/pagechat_payloads/payloadtype/", "/admin/pagechat_pages/chatpage/",
                "/admin/pagechat/run/?status__exact=completed&provider=offline", "/admin/pagechat/run/?q=owner"]:
        r = admin_client.get(url)
        assert r.status_code == 200, url
    detail = admin_client.get(f"/admin/pagechat/run/{run.pk}/change/").content.decode()
    assert "&lt;b&gt;x&lt;/b&gt;" in detail and "<b>x</b>" not in detail
    tools_page = admin_client.get("/admin/pagechat_tools/tool/").content.decode()
    assert "every page" in tools_page and "reports" in tools_page


def test_where_used_names_pages_tabs_and_subtabs() -> None:
    from pages.registry import PageRegistry, PageSpec, TabSpec

    reg = PageRegistry()
    reg.register(PageSpec(name="p", tools=("t",), tabs={"a": TabSpec("a", tools=("t",), payloads=("x",), subtabs={"s": TabSpec("s", tools=("t",))})}))
    assert reg.where_used(tool="t") == ["p", "p/a", "p/a/s"]
    assert reg.where_used(payload="x") == ["p/a"] and reg.where_used(tool="nope") == []


@pytest.mark.django_db
def test_admin_shows_per_action_success_rates(admin_client: Any) -> None:
    from chat.models import ActionStat, action_stat_count

    for fields in (("offered",), ("offered",), ("offered",), ("offered",), ("clicked", "rejected"), ("clicked",),
                   ("clicked",), ("clicked",), ("succeeded",), ("succeeded",), ("failed",)):
        action_stat_count(page="reports", action="execute_search", fields=fields)
    stat = ActionStat.objects.get(page="reports", action="execute_search")
    assert (stat.offered, stat.clicked, stat.succeeded, stat.failed, stat.rejected) == (4, 4, 2, 1, 1)
    page = admin_client.get("/admin/pagechat/actionstat/").content.decode()
    assert "execute_search" in page and "success rate" in page.lower()
    assert "67%" in page  # 2 of the 3 clicks that ran
    assert "100%" in page  # clicked / offered
