"""The pool blocking tool and server-action code runs in: not Django's one sync thread."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections

from chat.conf import chat_settings

_TOOL_EXECUTOR: ThreadPoolExecutor | None = None


def _tool_executor() -> ThreadPoolExecutor:
    global _TOOL_EXECUTOR
    if _TOOL_EXECUTOR is None:
        _TOOL_EXECUTOR = ThreadPoolExecutor(max_workers=chat_settings.CHAT_TOOL_THREADS, thread_name_prefix="pagechat-tool")
    return _TOOL_EXECUTOR


def _closing_connections(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn, then close this thread's database connections: a pool of idle threads must not hold one each
    (a tool call costs one connect, which is nothing next to a model call)."""
    try:
        return fn(*args)
    finally:
        connections.close_all()


async def run_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Blocking tool and action code runs in a pool of its own, not in Django's one sync thread.

    Why: the async ORM of every socket and request in the process goes through that one thread; a tool
    that takes ten seconds there would hold up every other user's handshake and save for ten seconds.
    """
    return await sync_to_async(_closing_connections, thread_sensitive=False, executor=_tool_executor())(fn, *args)
