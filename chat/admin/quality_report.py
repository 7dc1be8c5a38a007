"""The quality dashboard's figures: per day and per page, the turns people had with the assistant (eval
conversations left out), aggregated in SQL.

`quality_report(period=..., page=...)` is the one entry point (the admin's /admin/pagechat/quality/ calls it). Every
figure is a GROUP BY of the database's date truncation and the conversation's page; time to first text is a
percentile computed by the database: `percentile_cont` on PostgreSQL (every grouping in one statement), elsewhere
each group's rows are numbered by a window function and only the (at most four) rows around each percentile are
read, so a period of any length returns a bounded number of rows. The same linear interpolation (percentile_cont's)
is applied either way.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db import connections, router
from django.db.models import Count, DateField, F, Func, Model, Q, QuerySet, Sum, Value
from django.db.models.expressions import Combinable
from django.db.models.functions import TruncDate
from django.utils import timezone

from chat.models import Conversation, Message, Run, ToolCall

__all__ = ["COMMENTS_SHOWN", "PERCENTILES", "Comment", "Figures", "Period", "QualityReport", "first_text_percentiles",
           "page_names", "people_only", "quality_report", "user_runs"]

PERCENTILES = (0.5, 0.95)  # time to first text: the median and the 95th percentile
COMMENTS_SHOWN = 50  # the dashboard lists the latest feedback comments of the period, at most this many
TOOL_FAILED = (ToolCall.Status.ERROR, ToolCall.Status.INTERRUPTED)


@dataclass(frozen=True)
class Period:
    """Whole days `first` to `last` (both included), in the current time zone."""

    first: date
    last: date

    @classmethod
    def last_days(cls, days: int, *, today: date | None = None) -> Period:
        """The `days` days up to today (today included)."""
        today = today or timezone.localdate()
        return cls(today - timedelta(days=days - 1), today)

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=i) for i in range((self.last - self.first).days + 1)]

    def bounds(self) -> tuple[datetime, datetime]:
        """[start of `first`, start of the day after `last`) as aware datetimes."""
        tz = timezone.get_current_timezone()
        return (datetime.combine(self.first, time.min, tzinfo=tz), datetime.combine(self.last + timedelta(days=1), time.min, tzinfo=tz))


def people_only[M: Model](rows: QuerySet[M], prefix: str = "") -> QuerySet[M]:
    """The eval hook: `rows` (runs, messages, or rows reaching a conversation through `prefix`) without the
    conversations an eval ran (`Conversation.is_eval`), so the dashboard's figures are people's."""
    return rows.filter(**{f"{prefix}conversation__is_eval": False})


def user_runs(*, period: Period, page: str | None = None) -> QuerySet[Run]:
    """Every turn people had in `period` (by the turn's start), on `page` when one is given."""
    start, end = period.bounds()
    runs = people_only(Run.objects.filter(created_at__gte=start, created_at__lt=end))
    return runs.filter(conversation__page=page) if page is not None else runs


@dataclass
class Figures:
    """One group's figures (a day, a page or the whole period); the counts and sums add up across groups."""

    conversations: int = 0  # conversations with a turn in the group (a conversation is on one page; one on two days counts on each)
    turns: int = 0
    thumbs_up: int = 0
    thumbs_down: int = 0
    comments: int = 0
    tool_calls: int = 0
    tool_failures: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # by error code
    first_text_p50_ms: float | None = None
    first_text_p95_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: Decimal | None = None  # of the priced turns; None when none had a price

    ADDITIVE = ("conversations", "turns", "thumbs_up", "thumbs_down", "comments", "tool_calls", "tool_failures",
                "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")

    @property
    def tokens(self) -> int:
        """Every token, cache reads and writes included (what budgets count)."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def add(self, other: Figures) -> None:
        """Add `other`'s counts and sums to these (percentiles do not add: they are computed per group)."""
        for name in self.ADDITIVE:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for code, n in other.errors.items():
            self.errors[code] = self.errors.get(code, 0) + n
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or Decimal(0)) + other.cost_usd


@dataclass(frozen=True)
class Comment:
    """A reader's comment on an answer, with where to read the conversation."""

    message_id: int
    conversation_id: int
    conversation_title: str
    page: str
    verdict: str
    comment: str
    created_at: datetime


@dataclass
class QualityReport:
    period: Period
    page: str | None
    by_day: list[tuple[date, Figures]]
    by_page: list[tuple[str, Figures]]
    total: Figures
    error_codes: list[str]  # every code of the period, the most frequent first
    comments: list[Comment]  # the latest COMMENTS_SHOWN, newest first (total.comments counts them all)


def _interpolated(values: Mapping[int, float], n: int, fraction: float) -> float:
    """percentile_cont over n sorted values of which `values` holds the ones numbered (from 1) around the fraction
    (a value missing - a run deleted between the count and the read - stands in for its neighbour)."""
    position = (n - 1) * fraction
    below = math.floor(position)
    low = values.get(below + 1, values.get(below + 2, next(iter(values.values()))))
    high = values.get(below + 2, low)
    return low + (high - low) * (position - below)


Key = tuple[Any, ...]


def first_text_percentiles(runs: QuerySet[Run], columns: Mapping[str, Combinable], groupings: Sequence[tuple[str, ...]],
                           timed: Mapping[Key, int] | None = None) -> list[dict[Key, tuple[float, ...]]]:
    """Time to first text (ms) at each of PERCENTILES, over the runs that had text, for each grouping: a tuple of names
    of `columns` (name -> expression), keyed by their values (`()`: all the runs, keyed `()`).

    `timed`, optional: how many runs had text per combination of all `columns` (a GROUP BY the caller ran anyway)."""
    names = list(columns)
    rows = runs.filter(time_to_first_token_ms__isnull=False).annotate(**columns).order_by()
    connection = connections[router.db_for_read(Run)]
    if connection.vendor == "postgresql":
        return _percentile_conts(connection, rows, names, groupings)
    if timed is None:
        timed = {tuple(r[n] for n in names): r["n"] for r in rows.values(*names).annotate(n=Count("*"))}
    return _numbered_percentiles(connection, rows, names, groupings, timed)


def _percentile_conts(connection: Any, rows: QuerySet[Run], names: list[str], groupings: Sequence[tuple[str, ...]]) -> list[dict[Key, tuple[float, ...]]]:
    """PostgreSQL: `percentile_cont(ARRAY[...])` (one sort for all the fractions) over every grouping at once
    (GROUPING SETS: one read of the rows), which the ORM cannot write."""
    q = connection.ops.quote_name
    inner, params = rows.values(*names, "time_to_first_token_ms").query.sql_with_params()
    cols = [q(n) for n in names]
    sets = ", ".join("(" + ", ".join(q(g) for g in grouping) + ")" for grouping in groupings)
    marks = ", ".join(["%s"] * len(PERCENTILES))
    flags = f"GROUPING({', '.join(cols)}), " if cols else "0, "
    sql = (f"SELECT {flags}{''.join(c + ', ' for c in cols)}PERCENTILE_CONT(ARRAY[{marks}]::float8[]) WITHIN GROUP "
           f"(ORDER BY {q('time_to_first_token_ms')}) FROM ({inner}) timed GROUP BY GROUPING SETS ({sets})")
    # GROUPING(...) is a bit mask, the first column the highest bit: 1 where a column is not in the row's grouping
    index = {sum(1 << (len(names) - 1 - i) for i, n in enumerate(names) if n not in grouping): k for k, grouping in enumerate(groupings)}
    out: list[dict[Key, tuple[float, ...]]] = [{} for _ in groupings]
    converters = _converters(connection, rows, names)
    with connection.cursor() as cursor:
        cursor.execute(sql, (*PERCENTILES, *params))  # the fractions come first in the statement
        for mask, *key, values in cursor.fetchall():
            k = index[mask]
            if values is not None:
                out[k][tuple(converters[g](key[names.index(g)]) for g in groupings[k])] = tuple(values)
    return out


def _numbered_percentiles(connection: Any, rows: QuerySet[Run], names: list[str], groupings: Sequence[tuple[str, ...]],
                          timed: Mapping[Key, int]) -> list[dict[Key, tuple[float, ...]]]:
    """Without percentile_cont: each grouping numbers its groups' values in order (one window function) and the
    database returns only the values at the (at most four) positions the percentiles fall between, all groupings in
    one statement over one read of the rows. The ORM would compute a window once per condition, hence the SQL here."""
    q = connection.ops.quote_name
    inner, params = rows.values(*names, "time_to_first_token_ms").query.sql_with_params()
    sql_params: list[Any] = list(params)
    branches, sizes = [], []
    for i, grouping in enumerate(groupings):
        size: dict[Key, int] = {}
        for key, n in timed.items():
            group = tuple(key[names.index(g)] for g in grouping)
            size[group] = size.get(group, 0) + n
        sizes.append(size)
        pairs = [(*group, rn) for group, n in size.items() if n
                 for rn in sorted({math.floor((n - 1) * p) + k for p in PERCENTILES for k in (1, 2)} & set(range(1, n + 1)))]
        if not pairs:
            continue
        cols = [q(g) for g in grouping]
        keys = ", ".join([*cols, *["NULL"] * (len(names) - len(cols))])
        if cols:
            marks = "(" + ", ".join(["%s"] * (len(cols) + 1)) + ")"
            where = f"({', '.join(cols)}, rn) IN (VALUES {', '.join([marks] * len(pairs))})"
            fields = [rows.query.annotations[g].output_field for g in grouping]
            sql_params += [v if j == len(cols) else fields[j].get_db_prep_value(v, connection) for pair in pairs for j, v in enumerate(pair)]
        else:
            where = f"rn IN ({', '.join(['%s'] * len(pairs))})"
            sql_params += [pair[0] for pair in pairs]
        partition = f"PARTITION BY {', '.join(cols)} " if cols else ""
        branches.append(f"SELECT {i} AS grouping, {keys + ', ' if names else ''}rn, v FROM (SELECT {''.join(c + ', ' for c in cols)}"
                        f"{q('time_to_first_token_ms')} AS v, ROW_NUMBER() OVER ({partition}ORDER BY {q('time_to_first_token_ms')}) AS rn "
                        f"FROM timed) numbered{i} WHERE {where}")
    found: list[dict[Key, dict[int, float]]] = [{} for _ in groupings]
    if branches:
        converters = _converters(connection, rows, names)
        with connection.cursor() as cursor:
            cursor.execute(f"WITH timed AS ({inner}) " + " UNION ALL ".join(branches), sql_params)
            for grouping_index, *key, rn, v in cursor.fetchall():
                grouping = groupings[grouping_index]
                group = tuple(converters[name](value) for name, value in zip(grouping, key))
                found[grouping_index].setdefault(group, {})[rn] = v
    return [{group: tuple(_interpolated(values, sizes[i][group], p) for p in PERCENTILES)
             for group, values in found[i].items() if group in sizes[i]} for i in range(len(groupings))]


def _converters(connection: Any, rows: QuerySet[Run], names: list[str]) -> dict[str, Callable[[Any], Any]]:
    """For each annotation in `names`, the function turning its raw database value into the ORM's (a day: a date)."""
    def converter(expression: Any) -> Callable[[Any], Any]:
        found = connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)

        def convert(value: Any) -> Any:
            for step in found:
                value = step(value, expression, connection)
            return value
        return convert
    return {name: converter(rows.query.annotations[name]) for name in names}


def _offset_minutes(period: Period) -> int | None:
    """The current time zone's UTC offset in minutes when it is the same at every day's start in `period` (no
    daylight-saving change within it), else None."""
    tz = timezone.get_current_timezone()
    offsets = {datetime.combine(day, time.min, tzinfo=tz).utcoffset() for day in [*period.days, period.last + timedelta(days=1)]}
    only = offsets.pop() if len(offsets) == 1 else None
    return None if only is None else int(only.total_seconds() // 60)


def _day(period: Period, prefix: str = "") -> Func:
    """The day (current time zone) a row was created on, as the database truncates it.

    SQLite has no time zones: Django's TruncDate calls a Python function for every row (seconds over 100,000 turns),
    so there, when the zone's offset is the same all period long, SQLite's own date() is given that offset."""
    name = f"{prefix}created_at"
    offset = _offset_minutes(period)
    if connections[router.db_for_read(Run)].vendor == "sqlite" and offset is not None:
        return Func(F(name), Value(f"{offset:+d} minutes"), function="DATE", output_field=DateField())
    return TruncDate(name, tzinfo=timezone.get_current_timezone())


def quality_report(*, period: Period, page: str | None = None) -> QualityReport:
    """The dashboard's figures for `period`, of one page or of all (eval conversations left out)."""
    runs = user_runs(period=period, page=page)
    start, end = period.bounds()
    cells: dict[tuple[date, str], Figures] = {}
    timed: dict[Key, int] = {}  # runs that had text, per (day, page): the percentiles' group sizes

    def cell(day: date, pg: str) -> Figures:
        return cells.setdefault((day, pg), Figures())

    for row in (runs.annotate(day=_day(period), pg=F("conversation__page")).values("day", "pg").annotate(
            n_conversations=Count("conversation_id", distinct=True), n_turns=Count("*"), n_input=Sum("input_tokens"),
            n_output=Sum("output_tokens"), n_cache_read=Sum("cache_read_tokens"), n_cache_write=Sum("cache_write_tokens"),
            cost=Sum("cost_usd"), n_timed=Count("time_to_first_token_ms")).order_by()):
        c = cell(row["day"], row["pg"])
        timed[row["day"], row["pg"]] = row["n_timed"]
        c.conversations, c.turns = row["n_conversations"], row["n_turns"]
        c.input_tokens, c.output_tokens = row["n_input"] or 0, row["n_output"] or 0
        c.cache_read_tokens, c.cache_write_tokens = row["n_cache_read"] or 0, row["n_cache_write"] or 0
        c.cost_usd = row["cost"]
    for failed in (runs.exclude(error_code="").annotate(day=_day(period), pg=F("conversation__page"))
                   .values("day", "pg", "error_code").annotate(n=Count("*")).order_by()):
        cell(failed["day"], failed["pg"]).errors[failed["error_code"]] = failed["n"]
    calls = people_only(ToolCall.objects.filter(run__created_at__gte=start, run__created_at__lt=end), "run__")
    if page is not None:
        calls = calls.filter(run__conversation__page=page)
    for called in (calls.annotate(day=_day(period, "run__"), pg=F("run__conversation__page")).values("day", "pg")
                   .annotate(n=Count("pk"), failed=Count("pk", filter=Q(status__in=TOOL_FAILED))).order_by()):
        c = cell(called["day"], called["pg"])
        c.tool_calls, c.tool_failures = called["n"], called["failed"]
    # verdicts: the answers' own rows (few carry one; a partial index finds them by day), dated by the answer
    rated = people_only(Message.objects.filter(created_at__gte=start, created_at__lt=end).exclude(feedback=""))
    if page is not None:
        rated = rated.filter(conversation__page=page)
    for verdicts in (rated.annotate(day=_day(period), pg=F("conversation__page")).values("day", "pg").annotate(
            up=Count("pk", filter=Q(feedback=Message.Feedback.GOOD)), down=Count("pk", filter=Q(feedback=Message.Feedback.BAD)),
            commented=Count("pk", filter=~Q(feedback_comment=""))).order_by()):
        c = cell(verdicts["day"], verdicts["pg"])
        c.thumbs_up, c.thumbs_down, c.comments = verdicts["up"], verdicts["down"], verdicts["commented"]

    by_day = {day: Figures() for day in period.days}
    by_page: dict[str, Figures] = {}
    total = Figures()
    for (day, pg), c in cells.items():
        if day in by_day:  # always, unless the database's day and the period's disagree
            by_day[day].add(c)
        by_page.setdefault(pg, Figures()).add(c)
        total.add(c)
    # a conversation on several days counts once in the period: its page's and the total's counts are their own
    # (a conversation is on one page, so the pages' counts add up to the total's)
    total.conversations = 0
    for on_page in runs.values(pg=F("conversation__page")).annotate(n=Count("conversation_id", distinct=True)).order_by():
        by_page.setdefault(on_page["pg"], Figures()).conversations = on_page["n"]
        total.conversations += on_page["n"]
    per_day, per_page, overall = first_text_percentiles(runs, {"day": _day(period), "pg": F("conversation__page")},
                                                        [("day",), ("pg",), ()], timed=timed)
    for (day,), (p50, p95) in per_day.items():
        if day in by_day:
            by_day[day].first_text_p50_ms, by_day[day].first_text_p95_ms = p50, p95
    for (pg,), (p50, p95) in per_page.items():
        if pg in by_page:
            by_page[pg].first_text_p50_ms, by_page[pg].first_text_p95_ms = p50, p95
    total.first_text_p50_ms, total.first_text_p95_ms = overall.get((), (None, None))
    comments = [Comment(message_id=m["pk"], conversation_id=m["conversation_id"], conversation_title=m["conversation__title"],
                        page=m["conversation__page"], verdict=m["feedback"], comment=m["feedback_comment"], created_at=m["created_at"])
                for m in rated.exclude(feedback_comment="").order_by("-created_at", "-pk").values(
                    "pk", "conversation_id", "conversation__title", "conversation__page", "feedback", "feedback_comment", "created_at")[:COMMENTS_SHOWN]]
    return QualityReport(
        period=period, page=page, by_day=sorted(by_day.items()), by_page=sorted(by_page.items(), key=lambda kv: (-kv[1].turns, kv[0])),
        total=total, error_codes=sorted(total.errors, key=lambda code: (-total.errors[code], code)), comments=comments)


def page_names() -> list[str]:
    """Every page people's conversations were on (for the page filter)."""
    return sorted(set(Conversation.objects.filter(is_eval=False).values_list("page", flat=True).distinct().order_by()))

