"""The choke point every turn passes: `admitted` checks its limits - the message rate (CHAT_RATE_LIMIT_PER_MINUTE),
the daily budgets (CHAT_DAILY_*_BUDGET) - before anything is stored, `Admission.running` counts the runs in progress
(CHAT_MAX_RUNNING_PER_USER) in the transaction that stores the run, and `Admission.start`, the only place a run's task
starts, refuses a turn whose limits were not checked."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from django.db import connections, router

from chat.conf import chat_settings
from chat.events import ChatSend, StatusEvent
from chat.events.errors import BudgetExceeded, RateLimited
from chat.infra import metrics
from chat.models import Conversation, Run
from chat.providers.base import Provider
from chat.providers.factory import provider_get
from chat.quotas.budgets import budgets
from chat.quotas.limits import limiter
from chat.runs import manager
from chat.runs.store import runs_sweep
from chat.turns.persistence import TurnRecord
from chat.turns.work import turn_execute

if TYPE_CHECKING:
    from django.contrib.auth.models import User



@dataclass
class TurnStarted:
    """A started (or, for a resent client_message_id, an earlier) run to follow from seq 0."""

    run_id: str
    conversation_id: int
    created: bool


class Admission:
    """One turn's passage through the limits; `start` (the only place a run's task starts) refuses a turn whose
    message rate, budgets and runs in progress were not all checked."""

    def __init__(self, user: User) -> None:
        self.user = user
        self.ticket: str | None = None  # the message's place in the rate window
        self.limited = False  # the message rate and the budgets were checked
        self.counted_running = False  # the runs in progress were counted in the run's own transaction

    async def limits(self) -> None:
        """Count the message (RateLimited past CHAT_RATE_LIMIT_PER_MINUTE), then the daily budgets (BudgetExceeded)."""
        try:
            self.ticket = await limiter.check_message(self.user.pk)
        except RateLimited:
            metrics.RATE_LIMITED.labels("messages").inc()
            raise
        await budgets.check(self.user.pk)
        self.limited = True

    def running(self, running: int | None = None) -> None:
        """RateLimited when the user already has CHAT_MAX_RUNNING_PER_USER runs in progress (runs of dead processes
        are swept first). Called inside the transaction that stores the run; `running`: the count already read there."""
        if running is None:
            running = running_count(self.user.pk)
        if running >= chat_settings.CHAT_MAX_RUNNING_PER_USER and runs_sweep():  # dead processes' runs do not count
            running = running_count(self.user.pk)
        if running >= chat_settings.CHAT_MAX_RUNNING_PER_USER:
            metrics.RATE_LIMITED.labels("running").inc()
            raise RateLimited("too many runs in progress")
        self.counted_running = True

    async def give_back(self) -> None:
        """The message started nothing (a resend): its place in the rate window is free again."""
        if self.ticket is not None:
            await limiter.uncount_message(self.user.pk, self.ticket)
            self.ticket = None

    def start(self, frame: ChatSend, provider: Provider, started: TurnStarted, record: TurnRecord) -> None:
        """Create the run's handle, acknowledge (seq 1) and start its task: the model calls."""
        if not (self.limited and self.counted_running):  # a path that skipped the limits is a bug, never a free turn
            raise RuntimeError("a run was started without its admission's limits")
        handle = manager.create(started.run_id, started.conversation_id, self.user.pk)
        handle.append(StatusEvent.wire, message="Thinking…")  # the ack: the user message is stored
        manager.start(handle, turn_execute(handle, self.user, frame, provider, record))


async def admitted(user: User, *, resent: Callable[[], Awaitable[TurnStarted | None]],
                    begin: Callable[[Admission, Provider], Awaitable[TurnStarted]]) -> TurnStarted:
    """The choke point every turn passes: its limits, then `begin` (store the turn, count the runs in progress with
    `Admission.running`, start it with `Admission.start`). A refused message that `resent` finds stored already is
    answered with its earlier run (a resend starts nothing, so it is never refused); one `begin` finds stored gives
    its count back."""
    admission = Admission(user)
    try:
        await admission.limits()
    except (RateLimited, BudgetExceeded):
        earlier = await resent()
        if earlier is not None:
            return earlier
        raise
    provider = provider_get()
    # shielded: a caller cancelled meanwhile (socket closed, SSE client gone) must not leave a stored
    # message with a run that no task runs; the run starts and a resend or resume finds it
    started = await asyncio.shield(begin(admission, provider))
    if started.created:
        metrics.RUNS_STARTED.labels(provider.name).inc()
    else:
        await admission.give_back()
    return started


def running_count(user_id: int) -> int:
    """How many of the user's runs are running (every admission asks; its SQL is written once per database)."""
    alias = router.db_for_read(Run)
    with connections[alias].cursor() as cursor:
        cursor.execute(running_count_sql(alias), [user_id, Run.Status.RUNNING.value])
        return int(cursor.fetchone()[0])


@cache
def running_count_sql(alias: str) -> str:
    q = connections[alias].ops.quote_name
    r, c = Run._meta, Conversation._meta
    return (f"SELECT COUNT(*) FROM {q(r.db_table)} r INNER JOIN {q(c.db_table)} c ON r.{q('conversation_id')} = c.{q('id')} "
            f"WHERE c.{q('owner_id')} = %s AND r.{q('status')} = %s")
