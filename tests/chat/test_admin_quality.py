"""The admin's quality dashboard, /admin/pagechat/quality/: who may see it, its figures on a small known dataset
(per day, per page, the period), its filters, eval conversations left out, the percentiles (percentile_cont on
PostgreSQL, the numbered rows elsewhere, both equal to the textbook definition) and the indexes its queries read."""
from __future__ import annotations

import random
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.admin.quality_report import Period, _day, first_text_percentiles, quality_report, user_runs
from chat.models import Conversation, Message, Run, ToolCall

pytestmark = pytest.mark.django_db

QUALITY = "/admin/pagechat/quality/"
MARCH = "?period=custom&start=2026-03-01&end=2026-03-10"


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


def conversation(owner: Any, page: str, *, is_eval: bool = False, title: str = "") -> Conversation:
    return Conversation.objects.create(owner=owner, page=page, is_eval=is_eval, title=title)


def turn(conv: Conversation, when: datetime, *, ttft: float | None = None, error: str = "", tokens: tuple[int, int] = (0, 0),
         cost: str | None = None, verdict: str = "", comment: str = "", tools: tuple[str, ...] = ()) -> Run:
    """One turn as the engine stores it (question, answer, run, tool calls), dated `when`."""
    question = Message.objects.create(conversation=conv, role="user", content="q")
    answer = Message.objects.create(conversation=conv, role="assistant", content="a", feedback=verdict, feedback_comment=comment)
    run = Run.objects.create(conversation=conv, user_message=question, assistant_message=answer, status="error" if error else "completed",
                             error_code=error, time_to_first_token_ms=ttft, input_tokens=tokens[0], output_tokens=tokens[1],
                             cost_usd=Decimal(cost) if cost is not None else None)
    for i, status in enumerate(tools):
        ToolCall.objects.create(run=run, index=i, tool_use_id=f"t{i}", name="calculate", status=status)
    Run.objects.filter(pk=run.pk).update(created_at=when)  # auto_now_add stamped them now
    Message.objects.filter(pk__in=[question.pk, answer.pk]).update(created_at=when)
    return run


@pytest.fixture
def march(user: Any, other_user: Any) -> dict[str, Any]:
    """Two days and two pages of people's turns in March 2026, an eval conversation beside them, and a turn outside."""
    home, reports, reports2 = conversation(user, "home", title="Home talk"), conversation(user, "reports"), conversation(other_user, "reports")
    turn(home, at(2), ttft=100, tokens=(10, 5), cost="0.01", verdict="good", tools=("ok", "error"))
    turn(home, at(2, 13), ttft=200, tokens=(20, 5), cost="0.02", verdict="bad", comment="wrong stream count")
    turn(home, at(3), ttft=300, error="timeout", tokens=(30, 0), tools=("ok",))
    turn(reports, at(3), ttft=400, tokens=(40, 10), cost="0.04", verdict="bad", tools=("interrupted",))
    turn(reports, at(3, 14), error="provider_error")  # no text: no first-text time
    turn(reports2, at(3, 15), ttft=1000, error="timeout", verdict="good", comment="quick")
    evals = conversation(user, "home", is_eval=True, title="Eval demo: counts streams")
    turn(evals, at(2), ttft=99_999, error="internal", tokens=(1000, 1000), cost="9.99", verdict="bad", comment="EVAL-COMMENT", tools=("error",) * 5)
    turn(home, at(20), ttft=5, verdict="bad", comment="LATER-COMMENT", tools=("error",))  # outside 1-10 March
    return {"home": home, "reports": reports}


def _staff(django_user_model: Any, *perms: str) -> Client:
    user = django_user_model.objects.create_user("quality-staff", password="x", is_staff=True)
    user.user_permissions.add(*(Permission.objects.get(content_type__app_label="pagechat", codename=p) for p in perms))
    client = Client()
    client.force_login(user)
    return client


# who may see it

def test_anonymous_visitors_are_sent_to_the_login(client: Client) -> None:
    response = client.get(QUALITY)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.parametrize("perms", [(), ("view_conversation", "view_message")])
def test_staff_who_may_not_view_runs_get_403_and_no_figures(march: Any, django_user_model: Any, perms: tuple[str, ...]) -> None:
    client = _staff(django_user_model, *perms)
    response = client.get(QUALITY + MARCH)
    assert response.status_code == 403
    assert "wrong stream count" not in response.content.decode()
    assert QUALITY not in client.get("/admin/").content.decode()  # and the index does not offer it


@pytest.mark.parametrize("perm", ["view_run", "change_run"])
def test_staff_who_may_view_runs_see_it_and_the_index_links_it(march: Any, django_user_model: Any, perm: str) -> None:
    client = _staff(django_user_model, perm)
    response = client.get(QUALITY + MARCH)
    assert response.status_code == 200 and "wrong stream count" in response.content.decode()
    index = client.get("/admin/").content.decode()
    assert f'href="{QUALITY}"' in index and "Quality dashboard" in index


def test_a_superuser_sees_it(march: Any, admin_client: Client) -> None:
    response = admin_client.get(QUALITY + MARCH)
    assert response.status_code == 200 and "wrong stream count" in response.content.decode()
    assert f'href="{QUALITY}"' in admin_client.get("/admin/pagechat/").content.decode()


def test_the_proxy_adds_no_permissions_and_no_other_pages(admin_client: Client) -> None:
    assert not Permission.objects.filter(codename__endswith="_quality").exists()
    assert admin_client.get(QUALITY + "add/").status_code == 404


# the figures

def test_the_figures_of_a_small_dataset(march: Any) -> None:
    report = quality_report(period=Period(date(2026, 3, 1), date(2026, 3, 10)))
    days = dict(report.by_day)
    assert len(report.by_day) == 10 and days[date(2026, 3, 1)].turns == 0
    d2, d3 = days[date(2026, 3, 2)], days[date(2026, 3, 3)]
    assert (d2.conversations, d2.turns, d2.thumbs_up, d2.thumbs_down, d2.comments) == (1, 2, 1, 1, 1)
    assert (d3.conversations, d3.turns, d3.thumbs_up, d3.thumbs_down, d3.comments) == (3, 4, 1, 1, 1)
    assert (d2.tool_calls, d2.tool_failures, d3.tool_calls, d3.tool_failures) == (2, 1, 2, 1)
    assert d2.errors == {} and d3.errors == {"timeout": 2, "provider_error": 1}
    assert (d2.input_tokens, d2.output_tokens, d2.tokens, d2.cost_usd) == (30, 10, 40, Decimal("0.03"))
    # percentile_cont: day 2 has 100, 200; day 3 has 300, 400, 1000 (the provider_error turn had no text)
    assert d2.first_text_p50_ms == pytest.approx(150) and d2.first_text_p95_ms == pytest.approx(195)
    assert d3.first_text_p50_ms == pytest.approx(400) and d3.first_text_p95_ms == pytest.approx(940)
    assert days[date(2026, 3, 1)].first_text_p50_ms is None

    pages = dict(report.by_page)
    assert [name for name, _ in report.by_page] == ["home", "reports"]  # the most turns first
    assert (pages["home"].conversations, pages["home"].turns, pages["reports"].conversations, pages["reports"].turns) == (1, 3, 2, 3)
    assert pages["home"].errors == {"timeout": 1} and pages["reports"].errors == {"timeout": 1, "provider_error": 1}
    assert pages["home"].first_text_p50_ms == pytest.approx(200) and pages["reports"].first_text_p95_ms == pytest.approx(970)

    total = report.total
    assert (total.conversations, total.turns, total.thumbs_up, total.thumbs_down, total.comments) == (3, 6, 2, 2, 2)
    assert (total.tool_calls, total.tool_failures, total.error_count) == (4, 2, 3)
    assert report.error_codes == ["timeout", "provider_error"]
    assert total.cost_usd == Decimal("0.07") and total.tokens == 120
    # 100, 200, 300, 400, 1000: the median is 300, p95 at position 3.8 is 400 + 0.8 * 600
    assert total.first_text_p50_ms == pytest.approx(300) and total.first_text_p95_ms == pytest.approx(880)
    assert [(c.comment, c.verdict, c.page) for c in report.comments] == [("quick", "good", "reports"), ("wrong stream count", "bad", "home")]


def test_eval_conversations_are_left_out(march: Any) -> None:
    report = quality_report(period=Period(date(2026, 3, 1), date(2026, 3, 10)))
    assert "internal" not in report.total.errors and report.total.turns == 6 and report.total.tool_calls == 4
    assert all(c.comment != "EVAL-COMMENT" for c in report.comments) and report.total.first_text_p95_ms < 99_999
    Conversation.objects.filter(is_eval=True).update(is_eval=False)  # the same rows, counted once they are people's
    report = quality_report(period=Period(date(2026, 3, 1), date(2026, 3, 10)))
    assert report.total.errors["internal"] == 1 and report.total.turns == 7 and report.total.tool_calls == 9


def test_one_page(march: Any) -> None:
    report = quality_report(period=Period(date(2026, 3, 1), date(2026, 3, 10)), page="reports")
    assert [name for name, _ in report.by_page] == ["reports"]
    assert (report.total.turns, report.total.conversations, report.total.thumbs_down) == (3, 2, 1)
    assert report.total.first_text_p50_ms == pytest.approx(700)  # 400 and 1000
    assert [c.comment for c in report.comments] == ["quick"]


def test_the_page_shows_the_figures_charts_and_comments(march: Any, admin_client: Client) -> None:
    body = admin_client.get(QUALITY + MARCH).content.decode()
    assert body.count('<svg class="pagechat-chart__svg"') == 8  # seven per day, one per page
    for figure in re.findall(r'<figure class="pagechat-chart" id="([^"]+)">', body):  # every chart is named and has its numbers
        assert f'aria-labelledby="{figure}-caption"' in body and f'id="{figure}-caption"' in body
    assert body.count("<details class=\"pagechat-chart__numbers\">") == 8
    tokens = body.split('id="pagechat-quality-tokens"')[1].split("</figure>")[0]
    assert "<th scope=\"row\">03-02</th><td>30</td><td>10</td>" in tokens  # input, output of 2 March
    assert "timeout" in body and "provider_error" in body and "EVAL-COMMENT" not in body and "LATER-COMMENT" not in body
    link = f'/admin/pagechat/conversation/{march["home"].pk}/change/'
    assert f'<a href="{link}">Home talk</a>' in body
    dashboard = body.split('id="pagechat-quality-dashboard"')[1].split('<br class="clear">')[0]
    assert "style=" not in dashboard and "<script" not in dashboard and "http" not in dashboard  # CSP-safe, nothing external


def test_the_filters(march: Any, admin_client: Client) -> None:
    only_reports = admin_client.get(QUALITY + MARCH + "&page=reports").content.decode()
    assert "quick" in only_reports and "wrong stream count" not in only_reports
    later = admin_client.get(QUALITY + "?period=custom&start=2026-03-15&end=2026-03-25").content.decode()
    assert "LATER-COMMENT" in later and "wrong stream count" not in later
    backwards = admin_client.get(QUALITY + "?period=custom&start=2026-03-10&end=2026-03-01")
    assert backwards.status_code == 200 and "The period ends before it starts." in backwards.content.decode()
    too_long = admin_client.get(QUALITY + "?period=custom&start=2024-01-01&end=2026-03-01").content.decode()
    assert "A period is at most 366 days." in too_long


def test_the_last_days(user: Any, admin_client: Client) -> None:
    home = conversation(user, "home")
    turn(home, timezone.now() - timedelta(hours=1), verdict="bad", comment="RECENT")
    turn(home, timezone.now() - timedelta(days=10), verdict="bad", comment="TEN-DAYS-AGO")
    week = admin_client.get(QUALITY + "?period=7").content.decode()
    assert "RECENT" in week and "TEN-DAYS-AGO" not in week
    month = admin_client.get(QUALITY).content.decode()  # 30 days by default
    assert "RECENT" in month and "TEN-DAYS-AGO" in month


def test_conversations_on_no_page_are_a_page_of_their_own(user: Any, admin_client: Client) -> None:
    turn(conversation(user, ""), at(4), verdict="bad", comment="OFF-PAGE")
    turn(conversation(user, "home"), at(4), verdict="bad", comment="ON-HOME")
    body = admin_client.get(QUALITY + MARCH + "&page=-").content.decode()
    assert "OFF-PAGE" in body and "ON-HOME" not in body


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_days_are_the_time_zones(user: Any, settings: Any, zone: str) -> None:
    """A turn at 03:00 UTC on 10 January is on the 9th in New York, at 20:00 UTC on the 11th in Kolkata (+05:30)."""
    settings.TIME_ZONE = zone
    home = conversation(user, "home")
    turn(home, datetime(2026, 1, 10, 3, tzinfo=UTC), ttft=10)
    turn(home, datetime(2026, 1, 10, 20, tzinfo=UTC), ttft=30)
    with timezone.override(ZoneInfo(zone)):
        report = quality_report(period=Period(date(2026, 1, 8), date(2026, 1, 12)))
    turns = {day: f.turns for day, f in report.by_day if f.turns}
    assert turns == ({date(2026, 1, 9): 1, date(2026, 1, 10): 1} if zone == "America/New_York" else {date(2026, 1, 10): 1, date(2026, 1, 11): 1})


def test_a_period_across_a_daylight_saving_change(user: Any) -> None:
    """Paris moves from +01:00 to +02:00 on 29 March 2026: a turn at 22:30 UTC is on the 28th before, the 30th after."""
    home = conversation(user, "home")
    turn(home, datetime(2026, 3, 27, 22, 30, tzinfo=UTC), ttft=1)  # 23:30 in Paris, the 27th
    turn(home, datetime(2026, 3, 29, 22, 30, tzinfo=UTC), ttft=2)  # 00:30 in Paris, the 30th
    with timezone.override(ZoneInfo("Europe/Paris")):
        report = quality_report(period=Period(date(2026, 3, 26), date(2026, 3, 31)))
    assert {day: f.turns for day, f in report.by_day if f.turns} == {date(2026, 3, 27): 1, date(2026, 3, 30): 1}
    assert dict(report.by_day)[date(2026, 3, 30)].first_text_p50_ms == 2


def _percentile_cont(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def test_percentiles_of_every_grouping_are_percentile_conts(user: Any) -> None:
    """Random first-text times on three days and three pages, some turns without text: each grouping's p50 and p95
    equal the textbook percentile_cont (on PostgreSQL the database's own, elsewhere the numbered rows)."""
    rng = random.Random(7)
    convs = {page: conversation(user, page) for page in ("a", "b", "c")}
    samples = []
    for _ in range(120):
        page, day = rng.choice("abc"), rng.randint(1, 3)
        ttft = None if rng.random() < 0.1 else round(rng.uniform(10, 5000), 3)
        turn(convs[page], at(day, rng.randint(0, 23)), ttft=ttft)
        if ttft is not None:
            samples.append((date(2026, 3, day), page, ttft))

    def reference(key: Any) -> dict[tuple[Any, ...], tuple[float, float]]:
        groups: dict[tuple[Any, ...], list[float]] = {}
        for day, page, ttft in samples:
            groups.setdefault(key(day, page), []).append(ttft)
        return {k: (_percentile_cont(v, 0.5), _percentile_cont(v, 0.95)) for k, v in groups.items()}

    period = Period(date(2026, 3, 1), date(2026, 3, 3))
    columns = {"day": _day(period), "pg": F("conversation__page")}
    with CaptureQueriesContext(connection) as queries:
        found = first_text_percentiles(user_runs(period=period), columns, [("day", "pg"), ("day",), ("pg",), ()])
    sql = " ".join(q["sql"] for q in queries)
    assert ("PERCENTILE_CONT" in sql) == (connection.vendor == "postgresql") and len(queries) <= 4  # one statement a grouping at most
    wanted = [reference(lambda d, p: (d, p)), reference(lambda d, p: (d,)), reference(lambda d, p: (p,)), reference(lambda d, p: ())]
    for got, want in zip(found, wanted, strict=True):
        assert got.keys() == want.keys() and len(want) > 0
        for key, (p50, p95) in want.items():
            assert got[key] == (pytest.approx(p50), pytest.approx(p95)), key


def test_the_dashboard_asks_a_bounded_number_of_queries(march: Any, admin_client: Client, user: Any) -> None:
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(QUALITY + MARCH).status_code == 200
        return len(queries)

    before = count()
    for day in range(1, 11):  # more days, pages, turns and comments: not one query more
        turn(conversation(user, f"page{day}"), at(day), ttft=day, verdict="bad", comment=f"c{day}", tools=("ok",), error="timeout")
    assert count() == before <= 16


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's query plan")
def test_the_runs_are_read_from_the_covering_index_alone(march: Any) -> None:
    """The GROUP BY over a period reads `run_quality` only, never the runs' wide rows (their diagnostics)."""
    with CaptureQueriesContext(connection) as queries:
        quality_report(period=Period(date(2026, 3, 1), date(2026, 3, 10)))
    with connection.cursor() as cursor:
        plans = {q["sql"].split(" FROM ")[0][:60]: " ".join(str(row[-1]) for row in cursor.execute("EXPLAIN QUERY PLAN " + q["sql"]).fetchall())
                 for q in queries if '"pagechat_run"' in q["sql"]}
    assert plans and all("COVERING INDEX run_quality" in plan for plan in plans.values()), plans
