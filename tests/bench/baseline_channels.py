"""Baseline: a bare Channels consumer on daphne that only relays. On any frame it pushes a recorded frame
set through the channel layer to its own channel, one message per frame, and sends each as it arrives.
`daphne tests.bench.baseline_channels:application` (BENCH_FRAMES_DIR points at the recorded sets)."""
from __future__ import annotations

import asyncio
from typing import Any

import django
from django.conf import settings

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="bench-baseline",
        INSTALLED_APPS=["channels"],
        # capacity: a whole frame set may be queued before the consumer drains it (the app has no such cap)
        CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 100_000}}},
    )
    django.setup()

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import ProtocolTypeRouter

from tests.bench.frames import play


class RelayConsumer(AsyncWebsocketConsumer):
    """The Channels relay path: layer.send -> the consumer's dispatch loop -> self.send."""

    async def connect(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for task in self.tasks:
            task.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        async def to_layer(text: str) -> None:
            await self.channel_layer.send(self.channel_name, {"type": "relay.frame", "text": text})

        task = asyncio.get_running_loop().create_task(play(text_data or "{}", to_layer))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def relay_frame(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])


application = ProtocolTypeRouter({"websocket": RelayConsumer.as_asgi()})
