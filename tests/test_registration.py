"""The registries' shared base (chat.infra.registration): one duplicate rule, one check wording, one ORM mirror, discovery
after the built-ins."""
from __future__ import annotations

import pytest

from chat.checks import check_offline_intents
from chat.infra.registration import Registry, duplicate_errors
from chat.providers.offline import IntentRegistry, Reply, intents
from pages.models import ChatPage, chat_page_rows_sync
from pages.registry import PageRegistry, PageSpec, registry as pages
from payloads.registry import PayloadRegistry, registry as payloads
from payloads.spec import PayloadSpec
from tools.registry import ToolRegistry, registry as tools


def register_here(reg: PageRegistry, spec: PageSpec) -> PageSpec:
    return reg.register(spec)  # one registration site for the "same site again" case


def test_a_taken_name_from_elsewhere_is_recorded_and_the_first_stays() -> None:
    reg = PageRegistry()
    first, second = PageSpec(name="home"), PageSpec(name="home", identity="other")
    reg.register(first)
    reg.register(second)
    assert reg.get("home") is first and len(reg.duplicates) == 1
    dup = reg.duplicates[0]
    assert (dup.name, dup.kind) == ("home", "name") and dup.first.startswith(__file__) and dup.second.startswith(__file__)
    assert dup.first != dup.second


def test_the_same_site_registering_again_replaces_and_the_same_spec_is_a_no_op() -> None:
    reg = PageRegistry()
    spec = PageSpec(name="home")
    for identity in ("one", "two"):  # a module imported again registers from the same line
        register_here(reg, PageSpec(name="home", identity=identity))
    assert reg.get("home").identity == "two" and reg.duplicates == []
    other = PageRegistry()
    other.register(spec, origin="x:1")
    other.register(spec, origin="y:2")
    assert other.duplicates == [] and other.origin("home") == "x:1"


def test_every_registry_words_a_duplicate_alike() -> None:
    tool_reg, payload_reg, page_reg = ToolRegistry(), PayloadRegistry(), PageRegistry()

    def ping() -> str:
        """Answer pong."""
        return "pong"

    from tools.spec import spec_from_function

    tool_reg.register(spec_from_function(ping), origin="a.py:1")
    tool_reg.register(spec_from_function(ping), origin="b.py:2")
    payload_reg.register(PayloadSpec(type="ping", source="tool"), origin="a.py:1")
    payload_reg.register(PayloadSpec(type="ping", source="tool"), origin="b.py:2")
    page_reg.register(PageSpec(name="ping"), origin="a.py:1")
    page_reg.register(PageSpec(name="ping"), origin="b.py:2")
    intent_reg = IntentRegistry()
    intent_reg.register("ping", lambda r: 1, origin="a.py:1")(lambda r: Reply("pong"))
    intent_reg.register("ping", lambda r: 2, origin="b.py:2")(lambda r: Reply("PONG"))
    registries: list[tuple[Registry[object], str]] = [  # type: ignore[list-item]
        (tool_reg, "tool"), (payload_reg, "payload type"), (page_reg, "page"), (intent_reg, "offline model intent")]
    for reg, what in registries:
        [error] = duplicate_errors(reg, what, hint="h", id="x.E001")
        assert error.msg == f"{what} 'ping' is registered twice: in a.py:1 and in b.py:2 (the second is ignored)"


def test_discovery_comes_after_every_built_in() -> None:
    """The apps' `assistant` modules are imported once tools and payloads have their built-ins in: those come first."""
    built_in = [spec.module.startswith("tools.builtin") for spec in tools if not spec.mcp_server]
    assert True in built_in and False in built_in
    assert built_in == sorted(built_in, reverse=True)  # every built-in tool before the first a host registered
    assert "payloads/builtin.py:" in payloads.origin(payloads.all()[0].type)
    assert len(pages) > 0 and pages.duplicates == [] and payloads.duplicates == [] and tools.duplicates == []


@pytest.mark.django_db
def test_the_page_mirror_refreshes_rows_and_marks_the_gone() -> None:
    ChatPage.objects.all().delete()
    ChatPage.objects.create(name="gone_page", registered=True)
    chat_page_rows_sync()
    assert set(ChatPage.objects.filter(registered=True).values_list("name", flat=True)) == set(pages.page_names())
    assert not ChatPage.objects.get(name="gone_page").registered
    name = pages.page_names()[0]
    ChatPage.objects.filter(name=name).update(identity="stale", registered=False)
    chat_page_rows_sync()
    row = ChatPage.objects.get(name=name)
    assert row.identity == pages.get(name).identity and row.registered


def test_an_offline_intent_registered_twice_is_refused_and_checked() -> None:
    """The offline model's intents follow the registries' rule: the first stays, the second is reported (chat.E009)."""
    def first(r: object) -> Reply:
        return Reply("first")

    intents.register("twice", lambda r: 0, origin="a.py:1")(first)
    try:
        intents.register("twice", lambda r: 0, origin="b.py:2")(lambda r: Reply("second"))
        assert next(i for i in intents if i.name == "twice").handle is first and intents.names().count("twice") == 1
        [error] = check_offline_intents()
        assert error.id == "chat.E009" and error.msg == (
            "offline model intent 'twice' is registered twice: in a.py:1 and in b.py:2 (the second is ignored)")
    finally:
        intents.unregister("twice")
        intents.duplicates[:] = [d for d in intents.duplicates if d.name != "twice"]
    assert check_offline_intents() == []
