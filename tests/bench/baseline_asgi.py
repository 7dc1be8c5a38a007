"""Baseline: a bare ASGI websocket app on daphne. On any frame it sends a recorded frame set directly.
`daphne tests.bench.baseline_asgi:application` (BENCH_FRAMES_DIR points at the recorded sets)."""
from __future__ import annotations

import asyncio
from typing import Any

from tests.bench.frames import play


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "websocket":
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    tasks: set[asyncio.Task[Any]] = set()

    async def emit(text: str) -> None:
        await send({"type": "websocket.send", "text": text})

    while True:
        msg = await receive()
        if msg["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
        elif msg["type"] == "websocket.receive":
            # like the app: the stream runs in its own task, so the socket keeps reading frames
            task = asyncio.get_running_loop().create_task(play(msg["text"], emit))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        else:  # websocket.disconnect
            for task in tasks:
                task.cancel()
            return
