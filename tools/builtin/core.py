"""Global tools: read an earlier payload by id, tell the time, do arithmetic."""
from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated

from django.utils.dates import MONTHS, WEEKDAYS
from django.utils.translation import gettext, gettext_lazy as _, gettext_noop
from pydantic import Field

from chat.agent.types import ToolContext, ToolResult
from tools.registry import tool


@tool(is_global=True, title=_("Read an earlier card"))
def get_payload(payload_id: str, *, ctx: ToolContext) -> ToolResult:
    """Read the full data of a payload shown earlier in this conversation, by its payload_id from the PAYLOAD MANIFEST."""
    lookup = ctx.services.get("payload_lookup")
    found = lookup(payload_id) if lookup else None
    if found is None:
        return ToolResult(f"No payload with id {payload_id!r} in this conversation.", is_error=True)
    return ToolResult(json.dumps(found, default=str, ensure_ascii=False))


@tool(is_global=True, title=_("Current time"))
def get_current_time() -> str:
    """Get the current date and time (UTC)."""
    return time_said(datetime.now(UTC))


def time_said(now: datetime) -> str:
    """A moment as the user's language says it, its day and month by name ("Sunday 29 November 2026, 03:40 UTC",
    German "Sonntag, 29. November 2026, 03:40 UTC"): what the tool returns is shown to the user too."""
    return gettext("%(weekday)s %(day)s %(month)s %(year)s, %(time)s UTC") % {
        "weekday": WEEKDAYS[now.weekday()], "day": now.day, "month": MONTHS[now.month], "year": now.year, "time": f"{now:%H:%M}"}


_OPS: dict[type[ast.AST], Callable[..., float]] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Mod: operator.mod}


@tool(is_global=True, title=_("Calculator"))
def calculate(expression: Annotated[str, Field(title=gettext_noop("Expression"))]) -> str:
    """Evaluate an arithmetic expression such as "(2 + 3) * 4 / 7" (numbers, + - * / % ** and parentheses)."""
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            if isinstance(node.op, ast.Pow) and abs(ev(node.right)) > 100:
                raise ValueError("exponent too large")
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError("only numbers and + - * / % ** are allowed")
    if len(expression) > 200:
        raise ValueError("expression too long")
    return f"{expression} = {ev(ast.parse(expression, mode='eval').body):g}"
