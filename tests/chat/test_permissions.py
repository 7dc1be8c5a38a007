"""Permissions and group restrictions on tools, pages and server actions, through the real transports."""
from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group, Permission
from django.core import checks
from django.test import Client

from chat.models import Conversation, Message, Run, ToolCall
from chat.providers import scripted as s
from chat.turns.action_tokens import action_token_sign
from pages.checks import page_problems
from pages.models import chat_page_rows_sync
from pages.registry import PageRegistry, PageSpec, ServerAction, ServerActionResult, registry as pages
from payloads.registry import registry as payloads
from tests.chat.test_http import TokenClient, auth_headers, parse_sse
from tests.conftest import token_for, ws_connect
from tools.checks import tool_problems
from tools.models import Tool
from tools.registry import ToolRegistry, registry as tools
from tools.services import tool_rows_sync

pytestmark = pytest.mark.django_db(transaction=True)
RAN: list[str] = []
TOOL_PERM, PAGE_PERM, ACTION_PERM = "auth.add_group", "auth.change_group", "auth.delete_group"


def p_open(x: str) -> str:
    """An open tool."""
    RAN.append(f"open:{x}")
    return "open"


def p_guarded(x: str) -> str:
    """A tool that needs a permission."""
    RAN.append(f"guarded:{x}")
    return "guarded ran"


def p_action(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
    RAN.append("action")
    return ServerActionResult(message="Action done.")


@pytest.fixture
def page() -> Any:
    RAN.clear()
    tools.tool(name="p_open")(p_open)
    tools.tool(name="p_guarded", permissions=[TOOL_PERM])(p_guarded)
    pages.register(PageSpec(name="p_page", tools=("p_open", "p_guarded"),
                            server_actions=(ServerAction("p_act", "Guarded action", p_action, ("what",), permissions=[ACTION_PERM]),)))
    pages.register(PageSpec(name="p_locked", permissions=[PAGE_PERM]))
    yield
    for name in ("p_page", "p_locked"):
        pages.unregister(name)
    for name in ("p_open", "p_guarded"):
        tools.unregister(name)


def grant(user: Any, *perms: str) -> None:
    for perm in perms:
        app, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))


async def turn(ws: Any, page_name: str = "p_page", **kw: Any) -> list[dict[str, Any]]:
    await ws.chat(kw.pop("message", "go"), context={"current_page": page_name}, **kw)
    return await ws.until_terminal()


def offered(request: Any) -> set[str]:
    return {t["name"] for t in request.tools}


async def test_a_tool_without_its_permission_is_never_offered_and_a_forged_call_does_not_run(user: Any, page: Any, scripted: Any) -> None:
    scripted.enqueue(s.text("hi"), s.tool_call("p_guarded", {"x": "forged"}), s.text("done"))
    ws, _ = await ws_connect(user)
    first = await turn(ws)
    request = scripted.requests[0]
    assert "p_open" in offered(request) and "p_guarded" not in offered(request)
    assert "p_guarded" not in request.system and "p_open" in request.system  # not in the prompt's capabilities either
    run = await Run.objects.aget(pk=first[-1]["run_id"])
    assert run.diagnostics["tools_withheld"] == {"p_guarded": f"missing permission {TOOL_PERM}"}
    # the model calls it anyway (a hallucinated name or forged history): a tool error, never run
    events = await turn(ws, conversation_id=first[-1]["conversation_id"])
    assert events[-1]["type"] == "complete" and RAN == []
    call = await ToolCall.objects.aget(name="p_guarded")
    assert call.status == ToolCall.Status.ERROR and "unknown tool" in call.output
    # with the permission the same tool is offered (the test can fail)
    await database_sync_to_async(grant)(user, TOOL_PERM)
    scripted.enqueue(s.tool_call("p_guarded", {"x": "real"}), s.text("done"))
    await turn(ws, conversation_id=first[-1]["conversation_id"])
    assert "p_guarded" in offered(scripted.requests[-1]) and RAN == ["guarded:real"]
    await ws.close()


async def test_a_group_restriction_set_in_the_admin_applies_on_the_next_turn(user: Any, page: Any, scripted: Any, django_user_model: Any) -> None:
    await database_sync_to_async(tool_rows_sync)()
    await database_sync_to_async(chat_page_rows_sync)()
    editors = await Group.objects.acreate(name="editors")
    admin = await database_sync_to_async(django_user_model.objects.create_superuser)(username="root", password="pw")
    staff = Client()
    await database_sync_to_async(staff.force_login)(admin)
    ws, _ = await ws_connect(user)  # one socket for every turn: no reconnect, no restart
    scripted.enqueue(s.text("1"))
    conv = (await turn(ws))[-1]["conversation_id"]
    assert "p_open" in offered(scripted.requests[-1])

    tool = await Tool.objects.aget(name="p_open")
    r = await database_sync_to_async(staff.post)(f"/admin/pagechat_tools/tool/{tool.pk}/change/", {
        "enabled": "on", "groups": [editors.pk], "description_override": ""})
    assert r.status_code == 302, r.content[:2000]
    scripted.enqueue(s.text("2"))
    events = await turn(ws, conversation_id=conv)
    assert "p_open" not in offered(scripted.requests[-1])
    run = await Run.objects.aget(pk=events[-1]["run_id"])
    assert run.diagnostics["tools_withheld"]["p_open"] == "restricted to group editors"

    await user.groups.aadd(editors)
    scripted.enqueue(s.text("3"))
    await turn(ws, conversation_id=conv)
    assert "p_open" in offered(scripted.requests[-1])

    # a page restricted to another group: its turns are refused on the same socket
    page_row = await database_sync_to_async(lambda: pages_row("p_page"))()
    others = await Group.objects.acreate(name="others")
    r = await database_sync_to_async(staff.post)(f"/admin/pagechat_pages/chatpage/{page_row}/change/", {"groups": [others.pk]})
    assert r.status_code == 302, r.content[:2000]
    await ws.chat("again", context={"current_page": "p_page"}, conversation_id=conv)
    refused = await ws.recv()
    assert refused["type"] == "error" and refused["code"] == "forbidden" and "seq" not in refused
    await ws.close()


def pages_row(name: str) -> int:
    from pages.models import ChatPage

    return ChatPage.objects.get(name=name).pk


async def test_a_page_is_refused_with_forbidden_on_every_transport(user: Any, page: Any, scripted: Any) -> None:
    ws, _ = await ws_connect(user)
    await ws.chat("hi", context={"current_page": "p_locked"})
    frame = await ws.recv()
    assert frame["type"] == "error" and frame["code"] == "forbidden" and "seq" not in frame and "run_id" not in frame
    await ws.close()

    client = TokenClient(await auth_headers(user))
    r = await client.post("/api/chat/stream", {"client_message_id": "s1", "message": "hi", "context": {"current_page": "p_locked"}},
                          content_type="application/json")
    assert r.status_code == 403 and json.loads(r.content)["code"] == "forbidden"

    token = await database_sync_to_async(token_for)(user)
    rest = Client(HTTP_AUTHORIZATION=f"Token {token}")
    r = await database_sync_to_async(rest.post)("/api/chat", {"client_message_id": "r1", "message": "hi", "context": {"current_page": "p_locked"}},
                                                content_type="application/json")
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert await Message.objects.acount() == 0 and await Run.objects.acount() == 0 and scripted.requests == []

    await database_sync_to_async(grant)(user, PAGE_PERM)
    scripted.enqueue(s.text("welcome"))
    r = await database_sync_to_async(rest.post)("/api/chat", {"client_message_id": "r2", "message": "hi", "context": {"current_page": "p_locked"}},
                                                content_type="application/json")
    assert r.status_code == 200 and r.json()["message"] == "welcome"


async def test_a_server_action_the_user_may_not_run_is_never_offered_nor_signed_and_is_refused(user: Any, page: Any, scripted: Any) -> None:
    suggested = [{"label": "Act", "action": "p_act", "handler": "server", "data": {"what": "x"}}]
    scripted.enqueue(s.text(f"ok SUGGESTED_ACTIONS: {json.dumps(suggested)}"))
    ws, _ = await ws_connect(user)
    events = await turn(ws)
    assert "p_act" not in scripted.requests[0].system
    assert events[-1]["payload"]["suggested_actions"] == []  # never signed for this user
    conv = events[-1]["conversation_id"]
    run = await Run.objects.aget(pk=events[-1]["run_id"])
    assert run.diagnostics["server_actions_withheld"] == {"p_act": f"missing permission {ACTION_PERM}"}
    # a token obtained anyway (e.g. signed before the permission was withdrawn) is refused on every transport
    sign = database_sync_to_async(action_token_sign)

    async def frame(cmid: str) -> dict[str, Any]:
        token = await sign(user_id=user.pk, conversation_id=conv, action="p_act", data={"what": "x"})
        return {"client_message_id": cmid, "conversation_id": conv, "message": "Act", "context": {"current_page": "p_page"},
                "interaction_type": "action_executed",
                "action_metadata": {"action_identifier": "p_act", "action_data": {"what": "x"}, "token": token}}

    await ws.send({"type": "chat.send", **await frame("w1")})
    refused = await ws.recv()
    assert refused["type"] == "error" and refused["code"] == "forbidden" and "seq" not in refused
    await ws.close()
    client = TokenClient(await auth_headers(user))
    r = await client.post("/api/chat/stream", await frame("s1"), content_type="application/json")
    assert r.status_code == 403 and json.loads(r.content)["code"] == "forbidden"
    token = await database_sync_to_async(token_for)(user)
    rest = Client(HTTP_AUTHORIZATION=f"Token {token}")
    r = await database_sync_to_async(rest.post)("/api/chat", await frame("r1"), content_type="application/json")
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert RAN == [] and await Run.objects.acount() == 1

    # with the permission: offered, signed, and it runs
    await database_sync_to_async(grant)(user, ACTION_PERM)
    scripted.enqueue(s.text(f"ok SUGGESTED_ACTIONS: {json.dumps(suggested)}"))
    r = await client.post("/api/chat/stream", {"client_message_id": "s2", "conversation_id": conv, "message": "again",
                                               "context": {"current_page": "p_page"}}, content_type="application/json")
    events = [e for _, e in parse_sse([c async for c in r.streaming_content])]
    assert "p_act" in scripted.requests[-1].system and events[-1]["payload"]["suggested_actions"][0]["token"]
    r = await database_sync_to_async(rest.post)("/api/chat", await frame("r2"), content_type="application/json")
    assert r.status_code == 200 and RAN == ["action"]


def test_the_tray_renders_nothing_on_a_page_the_user_may_not_use(user: Any, page: Any, rf: Any) -> None:
    from django.template import Context, Template

    request = rf.get("/")
    request.user = user
    locked = Template('{% load chat_tags %}{% chat_tray page="p_locked" %}')
    assert locked.render(Context({"request": request, "user": user})).strip() == ""
    grant(user, PAGE_PERM)
    assert "data-chat-tray" in locked.render(Context({"request": request, "user": user}))


def test_a_permission_string_naming_no_permission_is_a_check_error() -> None:
    reg = ToolRegistry()
    reg.tool(name="t1", permissions=["auth.add_group", "auth.fly_group", "nope"])(p_open)
    found = [(m.id, m.msg) for m in tool_problems(reg)]
    assert [i for i, _ in found] == ["tools.E005", "tools.E005"] and "'auth.fly_group'" in found[0][1] and "'nope'" in found[1][1]
    page_reg = PageRegistry()
    page_reg.register(PageSpec(name="pg", permissions=["auth.view_user", "pagechat_demo.change_stream"],
                               server_actions=(ServerAction("a", "A", p_action, permissions=["auth.bogus"]),)))
    msgs = [m for m in page_problems(page_reg, reg, payloads) if m.id == "pages.E009"]
    assert len(msgs) == 2 and all(isinstance(m, checks.Error) for m in msgs)
    assert "pagechat_demo.change_stream" in msgs[0].msg and "auth.bogus" in msgs[1].msg


def test_demo_setup_gives_demo_and_alice_every_flow_and_viewer_only_views(django_user_model: Any, settings: Any) -> None:
    from django.core.management import call_command

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.DEBUG = True  # a development copy (with DEBUG off demo_setup refuses without --force)
    call_command("demo_setup", stdout=open("/dev/null", "w"))
    users = {u.username: u for u in django_user_model.objects.all()}
    for name in ("demo", "alice"):
        assert {f"pagechat_demo.{a}_researchstream" for a in ("add", "change", "delete", "view")} <= users[name].get_all_permissions()
    viewer = users["viewer"]
    assert viewer.check_password("viewer") and not viewer.is_staff
    assert viewer.get_all_permissions() and all(p.split(".")[1].startswith("view_") for p in viewer.get_all_permissions())
    from pages.access import user_page_denied

    assert user_page_denied(viewer, pages.get("edit_research_stream")) == "missing permission pagechat_demo.change_researchstream"
    assert user_page_denied(users["alice"], pages.get("edit_research_stream")) is None
    assert Conversation.objects.count() == 0
