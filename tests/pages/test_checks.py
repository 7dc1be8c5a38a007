"""Mistakes a host can make are system-check messages naming the files involved, not import tracebacks."""
from __future__ import annotations

import importlib.util
import logging
import sys
import textwrap
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from pages.checks import old_discovery_problems, page_problems, tray_tag_problems
from pages.registry import PageRegistry, PageSpec, registry as pages
from payloads.checks import payload_problems
from payloads.registry import PayloadRegistry
from tools.checks import tool_problems
from tools.registry import ToolRegistry

# One app's discovery module: registers a tool, a payload type and a page into the registries it is given.
ASSISTANT = """
from pages.registry import PageSpec
from payloads.spec import PayloadSpec

def lookup(order_id: str) -> str:
    '''Look up an order.'''
    return order_id

def register(tools, payloads, pages):
    tools.tool(lookup)
    payloads.register(PayloadSpec(type="order_card", parse_marker="ORDER_CARD:"))
    pages.register(PageSpec(name="orders"))
"""


def load(path: Path, source: str) -> ModuleType:
    """Import `source` as a module living at `path` (so origins name that file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(f"t_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Opaque:
    """A type pydantic cannot turn into a JSON schema."""


def ids(messages: list[Any]) -> list[str]:
    return [m.id for m in messages]


def test_duplicate_names_are_reported_with_both_files(tmp_path: Path) -> None:
    tools, payloads, page_reg = ToolRegistry(), PayloadRegistry(), PageRegistry()
    a = tmp_path / "shop" / "assistant.py"
    b = tmp_path / "billing" / "assistant.py"
    load(a, ASSISTANT).register(tools, payloads, page_reg)
    load(b, ASSISTANT).register(tools, payloads, page_reg)  # no exception: the import goes through

    errors = [*tool_problems(tools), *payload_problems(payloads), *page_problems(page_reg, tools, payloads)]
    assert sorted(ids(errors)) == ["pages.E005", "payloads.E002", "tools.E003"]
    for error in errors:
        assert str(a) in error.msg and str(b) in error.msg, error.msg
    # the first registration stays in service
    assert tools.origin("lookup").startswith(str(a)) and page_reg.origin("orders").startswith(str(a))


def test_a_taken_or_reserved_marker_is_reported(tmp_path: Path) -> None:
    payloads = PayloadRegistry()
    mod = load(tmp_path / "a" / "assistant.py", """
        from payloads.spec import PayloadSpec
        def register(reg):
            reg.register(PayloadSpec(type="one", parse_marker="CARD:"))
            reg.register(PayloadSpec(type="two", parse_marker="CARD:"))
            reg.register(PayloadSpec(type="three", parse_marker="SUGGESTED_ACTIONS:"))
    """)
    mod.register(payloads)
    errors = payload_problems(payloads)
    assert ids(errors) == ["payloads.E003", "payloads.E004"]
    assert "'CARD:' is used twice" in errors[0].msg and errors[0].msg.count(str(tmp_path / "a" / "assistant.py")) == 2
    assert "reserved" in errors[1].msg
    assert [s.type for s in payloads] == ["one"]


def test_a_tool_parameter_without_a_usable_annotation_is_reported() -> None:
    tools = ToolRegistry()

    @tools.tool
    def untyped(query, limit: int = 5) -> str:  # type: ignore[no-untyped-def]
        """Search by keywords."""
        return ""

    @tools.tool
    def opaque(thing: Opaque) -> str:
        """Take something pydantic cannot describe."""
        return ""

    @tools.tool
    def fine(query: str) -> str:
        """Fine."""
        return query

    errors = tool_problems(tools)
    assert ids(errors) == ["tools.E004", "tools.E004"]
    assert "'query' has no type annotation" in errors[0].msg and __file__ in errors[0].msg
    assert "'thing'" in errors[1].msg and "no JSON schema" in errors[1].msg
    assert [s.name for s in tools.resolve(["untyped", "opaque", "fine"])] == ["fine"]


def test_a_context_builder_or_handler_with_the_wrong_signature_is_reported() -> None:
    from pages.registry import ServerAction, ServerActionResult

    def one_arg(context: dict[str, Any]) -> str:
        return ""

    async def asynchronous(context: dict[str, Any], user: Any) -> str:
        return ""

    def good(context: dict[str, Any], user: Any) -> str:
        return ""

    def two_args(data: dict[str, Any], user: Any) -> ServerActionResult:
        return ServerActionResult(message="")

    reg = PageRegistry()
    reg.register(PageSpec(name="a", context_builder=one_arg))  # type: ignore[arg-type]
    reg.register(PageSpec(name="b", context_builder=asynchronous))  # type: ignore[arg-type]
    reg.register(PageSpec(name="c", context_builder=good, server_actions=(ServerAction("go", "Go", two_args),)))  # type: ignore[arg-type]
    errors = page_problems(reg, ToolRegistry(), PayloadRegistry())
    assert ids(errors) == ["pages.E006", "pages.E006", "pages.E007"]
    assert "cannot take 2 positional arguments" in errors[0].msg and "is async" in errors[1].msg
    assert "'go' handler cannot take 3" in errors[2].msg


def test_a_tray_tag_naming_an_unregistered_page_is_reported(tmp_path: Path) -> None:
    templates = tmp_path / "templates" / "shop"
    templates.mkdir(parents=True)
    (templates / "ok.html").write_text('{% load chat_tags %}{% chat_tray page="orders" %}')
    (templates / "typo.html").write_text("<p>\n{% load chat_tags %}\n{% chat_tray context=ctx page='ordres' %}")
    (templates / "variable.html").write_text("{% load chat_tags %}{% chat_tray page=page_name %}")
    reg = PageRegistry()
    reg.register(PageSpec(name="orders"))
    errors = tray_tag_problems(reg, [tmp_path / "templates"])
    assert ids(errors) == ["pages.E008"]
    assert f"{templates / 'typo.html'}:3" in errors[0].msg and "'ordres'" in errors[0].msg


@pytest.mark.django_db
def test_checks_scan_the_installed_template_dirs(settings: Any, tmp_path: Path) -> None:
    (tmp_path / "bad.html").write_text('{% load chat_tags %}{% chat_tray page="no_such_page" %}')
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [*settings.TEMPLATES[0]["DIRS"], tmp_path]}]
    with pytest.raises(SystemCheckError) as err:
        call_command("check")
    assert "pages.E008" in str(err.value) and "no_such_page" in str(err.value)


@pytest.mark.django_db
def test_a_duplicate_in_the_real_registries_fails_manage_py_check(tmp_path: Path) -> None:
    from payloads.registry import registry as payloads
    from tools.registry import registry as tools

    before = (len(tools.duplicates), len(pages.duplicates))
    load(tmp_path / "x" / "assistant.py", """
        from pages.registry import PageSpec, register_page
        from tools.registry import tool

        @tool
        def calculate(expression: str) -> str:
            '''Another calculator.'''
            return expression

        register_page(PageSpec(name="home"))
    """)
    try:
        with pytest.raises(SystemCheckError) as err:
            call_command("check")
        text = str(err.value)
        assert "tools.E003" in text and "pages.E005" in text and str(tmp_path / "x" / "assistant.py") in text
        assert "tools/builtin/core.py" in text and "pages/demo/home.py" in text
    finally:
        del tools.duplicates[before[0]:], pages.duplicates[before[1]:]
    assert payloads.refused == []
    call_command("check")


def test_an_unknown_page_in_a_request_is_logged_once_and_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    reg = PageRegistry()
    with caplog.at_level(logging.WARNING, logger="pages.registry"):
        assert reg.get("ordres").name == "default"
        assert reg.get("ordres").name == "default"
        assert reg.get("").name == "default"
    warnings = [r for r in caplog.records if r.name == "pages.registry"]
    assert len(warnings) == 1 and "'ordres' is not registered" in warnings[0].getMessage()


class Records(logging.Handler):
    """Collects records of one logger (caplog's root handler is replaced when config.asgi sets Django up)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.django_db(transaction=True)
async def test_a_turn_on_an_unknown_page_still_answers(user: Any) -> None:
    from tests.conftest import ws_connect

    pages.unknown_requested.discard("no_such_page")
    records = Records()
    logging.getLogger("pages.registry").addHandler(records)
    try:
        ws, _ = await ws_connect(user)
        assert ws is not None
        await ws.chat("calculate 6*7", context={"current_page": "no_such_page"})
        events = await ws.until_terminal()
        await ws.close()
    finally:
        logging.getLogger("pages.registry").removeHandler(records)
    assert events[-1]["type"] == "complete" and "42" in events[-1]["payload"]["message"]
    assert any("'no_such_page' is not registered" in m for m in records.messages)


def test_modules_under_the_old_discovery_names_get_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "legacy_app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "chat_pages.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    warnings = old_discovery_problems([SimpleNamespace(name="legacy_app", label="legacy_app"), SimpleNamespace(name="chat", label="pagechat")])
    assert ids(warnings) == ["pages.W001"] and "legacy_app.chat_pages" in warnings[0].msg and "legacy_app.assistant" in warnings[0].hint
    sys.modules.pop("legacy_app", None)


def test_a_tray_tag_naming_an_unknown_page_at_render_time_is_logged() -> None:
    from django.contrib.auth.models import User
    from django.template import Context, Template
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = User(username="ann")
    pages.unknown_requested.discard("ordres")
    records = Records()
    logging.getLogger("pages.registry").addHandler(records)
    try:
        html = Template("{% load chat_tags %}{% chat_tray page=name %}").render(Context({"request": request, "user": request.user, "name": "ordres"}))
    finally:
        logging.getLogger("pages.registry").removeHandler(records)
    assert 'data-chat-tray' in html  # the tray still renders (default page)
    assert any("'ordres' is not registered" in m for m in records.messages)
