"""Per-user daily budgets (CHAT_DAILY_TOKEN_BUDGET, CHAT_DAILY_COST_BUDGET): checked when a turn is admitted (every
path that starts a model call: chat.turns.admission), spent when its run ends.

With CHAT_REDIS_URL the day's spending is a Redis hash per user and UTC day (`<CHAT_REDIS_KEY_PREFIX>budget:<user>:<yyyymmdd>`),
shared by every process; without it the database's runs of the day are summed (shared too, one query per
admitted message). A turn in progress counts once it ends, so a user can overshoot by the turns running at the
moment the budget is reached. If Redis is unreachable the check falls back to the database.
"""
from __future__ import annotations

import datetime as dt
import logging
import math
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.db.models import Sum
from django.utils import timezone

from chat.conf import chat_settings
from chat.events.errors import BudgetExceeded
from chat.infra.logs import Throttled
from chat.infra.redis_client import LoopClient, redis_errors, redis_key
from chat.quotas.costs import total_tokens

log = logging.getLogger(__name__)
# Redis away is recoverable and every turn would say so again: one line a minute each
_read_redis = Throttled(log)
_write_redis = Throttled(log)
KEY_TTL = 2 * 24 * 3600  # a day's hash outlives its day, then goes by itself


@dataclass(frozen=True, slots=True)
class Spent:
    """A user's spending of one UTC day."""

    tokens: int
    cost: float


def _day(now: dt.datetime | None = None) -> str:
    return (now or timezone.now()).astimezone(dt.UTC).strftime("%Y%m%d")


def seconds_to_midnight(now: dt.datetime | None = None) -> int:
    """Whole seconds (at least 1) until the next UTC midnight, when the day's budgets start again."""
    now = (now or timezone.now()).astimezone(dt.UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0) + dt.timedelta(days=1)
    return max(1, math.ceil((midnight - now).total_seconds()))


class Budgets:
    """Checks and records what each user spends per UTC day."""

    def __init__(self) -> None:
        self._redis = LoopClient()

    @staticmethod
    def enabled() -> bool:
        return bool(chat_settings.CHAT_DAILY_TOKEN_BUDGET or chat_settings.CHAT_DAILY_COST_BUDGET)

    def _client(self) -> Any:
        return self._redis.get()

    @staticmethod
    def key(user_id: int, day: str | None = None) -> str:
        return redis_key(f"budget:{user_id}:{day or _day()}")

    async def spent_today(self, user_id: int) -> Spent:
        """Tokens and cost of the user's turns that ended today (UTC)."""
        r = self._client()
        if r is not None:
            try:
                raw = await r.hgetall(self.key(user_id))
                return Spent(int(raw.get("tokens", 0)), float(raw.get("cost", 0.0)))
            except redis_errors() as exc:
                _read_redis.warning("budgets: Redis unavailable, summing today's runs from the database", exc=exc)
        return await database_sync_to_async(spent_in_database)(user_id=user_id)

    async def check(self, user_id: int) -> None:
        """Raise BudgetExceeded when the user has used up a daily budget."""
        if not self.enabled():
            return
        spent = await self.spent_today(user_id)
        tokens, cost = chat_settings.CHAT_DAILY_TOKEN_BUDGET, chat_settings.CHAT_DAILY_COST_BUDGET
        if tokens and spent.tokens >= tokens:
            raise BudgetExceeded(f"You have used today's budget of {tokens:,} tokens for the assistant; it resets at midnight UTC.",
                                 retry_after=seconds_to_midnight())
        if cost and spent.cost >= cost:
            raise BudgetExceeded(f"You have used today's budget of ${cost:,.2f} for the assistant; it resets at midnight UTC.",
                                 retry_after=seconds_to_midnight())

    async def spend(self, user_id: int, usage: dict[str, int], cost: float | None) -> None:
        """Add a finished run's usage to the user's day (Redis only: the database already holds the run)."""
        r = self._client()
        if r is None or not self.enabled():
            return
        try:
            key = self.key(user_id)
            pipe = r.pipeline(transaction=True)
            pipe.hincrby(key, "tokens", total_tokens(usage))
            pipe.hincrbyfloat(key, "cost", cost or 0.0)
            pipe.expire(key, KEY_TTL)
            await pipe.execute()
        except redis_errors() as exc:
            _write_redis.warning("budgets: could not record a run's usage in Redis", exc=exc)


def spent_in_database(*, user_id: int, now: dt.datetime | None = None) -> Spent:
    """The user's tokens and cost of runs created today (UTC), from the runs table."""
    from chat.models import Run

    now = (now or timezone.now()).astimezone(dt.UTC)
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    sums = Run.objects.filter(conversation__owner_id=user_id, created_at__gte=start).aggregate(
        i=Sum("input_tokens"), o=Sum("output_tokens"), r=Sum("cache_read_tokens"), w=Sum("cache_write_tokens"), c=Sum("cost_usd"))
    tokens = sum(int(sums[k] or 0) for k in "iorw")
    return Spent(tokens, float(sums["c"] or 0))


budgets = Budgets()
