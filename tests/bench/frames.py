"""Recorded frame sets shared by the bench client and the baseline servers (BENCH_FRAMES_DIR/<name>.json)."""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

_cache: dict[str, tuple[list[str], list[float]]] = {}


def frames_dir() -> Path:
    return Path(os.environ.get("BENCH_FRAMES_DIR", "var/bench/frames"))


def save(name: str, frames: list[str], offsets: list[float]) -> None:
    """Store the exact text of a recorded run's frames and their arrival offsets (seconds from the send)."""
    frames_dir().mkdir(parents=True, exist_ok=True)
    (frames_dir() / f"{name}.json").write_text(json.dumps({"frames": frames, "offsets": offsets}))


def load(name: str) -> tuple[list[str], list[float]]:
    if name not in _cache:
        data = json.loads((frames_dir() / f"{name}.json").read_text())
        _cache[name] = (data["frames"], data["offsets"])
    return _cache[name]


async def play(request_text: str, emit: Any) -> None:
    """Send a set's frames through `emit(text)`: back to back, or at their recorded offsets when `pace`."""
    req: dict[str, Any] = json.loads(request_text)
    frames, offsets = load(req["set"])
    if not req.get("pace"):
        each_turn = bool(req.get("yield"))  # one frame per event-loop turn, as a streamed model produces them
        for f in frames:
            await emit(f)
            if each_turn:
                await asyncio.sleep(0)
        return
    start = time.perf_counter() - offsets[0]  # the first frame goes out at once: pace only the gaps between frames
    for f, at in zip(frames, offsets):
        delay = start + at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await emit(f)
