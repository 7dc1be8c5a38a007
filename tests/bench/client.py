"""Bench clients (asyncio): protocol-v1 websocket turns, SSE turns, baseline relays; seq checking; stats."""
from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

TERMINAL = ("complete", "cancelled", "error")


async def ws_open(url: str, token: str | None = None) -> ClientConnection:
    headers = {"Authorization": f"Token {token}"} if token else None
    return await connect(url, additional_headers=headers, max_size=None, compression=None,
                         ping_interval=None, open_timeout=60, close_timeout=2, max_queue=None)


@dataclass
class SeqCheck:
    """Gaps, duplicates and out-of-order events of one run's stream (seq must be 1, 2, 3, ...)."""

    seen: set[int] = field(default_factory=set)
    last: int = 0
    duplicates: int = 0
    out_of_order: int = 0

    def add(self, seq: int) -> None:
        if seq in self.seen:
            self.duplicates += 1
            return
        if seq < self.last:
            self.out_of_order += 1
        self.seen.add(seq)
        self.last = max(self.last, seq)

    @property
    def gaps(self) -> int:
        return (max(self.seen) - len(self.seen)) if self.seen else 0


@dataclass
class Turn:
    """One turn as the client saw it; times are seconds from the send."""

    ok: bool = False
    first_event: float | None = None
    first_text: float | None = None
    end: float | None = None
    events: int = 0
    run_id: str = ""
    conversation_id: int | None = None
    check: SeqCheck = field(default_factory=SeqCheck)
    text_matches: bool = True  # streamed text == complete.payload.message
    error: str = ""
    frames: list[str] = field(default_factory=list)
    offsets: list[float] = field(default_factory=list)
    arrivals: dict[int, float] = field(default_factory=dict)  # seq -> perf_counter (when asked)


def send_frame(message: str, conversation_id: int | None) -> str:
    return json.dumps({"type": "chat.send", "client_message_id": str(uuid.uuid4()), "conversation_id": conversation_id,
                       "message": message, "context": {}})


async def read_run(ws: ClientConnection, t0: float, turn: Turn, *, record: bool = False, arrivals: bool = False,
                   on_event: Any = None, timeout: float = 60.0) -> Turn:
    """Read one run's events until its terminal event, checking seq order and the text."""
    texts: list[str] = []
    async with asyncio.timeout(timeout):
        while True:
            raw = await ws.recv()
            now = time.perf_counter()
            ev = json.loads(raw)
            if "seq" not in ev:  # a frame-level error: no run
                turn.error = f"{ev.get('code')}: {ev.get('message')}"
                turn.end = now - t0
                return turn
            if turn.first_event is None:
                turn.first_event = now - t0
                turn.run_id, turn.conversation_id = ev["run_id"], ev.get("conversation_id")
            turn.events += 1
            turn.check.add(ev["seq"])
            if record:
                turn.frames.append(raw if isinstance(raw, str) else raw.decode())
                turn.offsets.append(now - t0)
            if arrivals:
                turn.arrivals[ev["seq"]] = now
            kind = ev["type"]
            if kind == "text_delta":
                if turn.first_text is None:
                    turn.first_text = now - t0
                texts.append(ev["text"])
            if on_event is not None:
                on_event(ev)
            if kind in TERMINAL:
                turn.end = now - t0
                turn.ok = kind == "complete"
                if kind == "complete":
                    turn.text_matches = "".join(texts) == ev["payload"]["message"]
                else:
                    turn.error = f"{kind}: {ev.get('code', '')} {ev.get('message', '')}"
                return turn


async def ws_turn(ws: ClientConnection, message: str, conversation_id: int | None, **kw: Any) -> Turn:
    frame = send_frame(message, conversation_id)
    turn = Turn()
    t0 = time.perf_counter()
    await ws.send(frame)
    return await read_run(ws, t0, turn, **kw)


async def relay_turn(ws: ClientConnection, set_name: str, *, pace: bool = False, each_turn: bool = False, timeout: float = 60.0) -> Turn:
    """A baseline round: ask a relay server for a frame set; time the first and last frame."""
    turn = Turn()
    t0 = time.perf_counter()
    await ws.send(json.dumps({"set": set_name, "pace": pace, "yield": each_turn}))
    async with asyncio.timeout(timeout):
        while True:
            raw = await ws.recv()
            now = time.perf_counter()
            if turn.first_event is None:
                turn.first_event = now - t0
            turn.events += 1
            # the recorded frames carry seq and type: read just the head, as cheaply as the app client parses
            ev = json.loads(raw)
            turn.check.add(ev["seq"])
            if ev["type"] == "text_delta" and turn.first_text is None:
                turn.first_text = now - t0
            if ev["type"] in TERMINAL:
                turn.end = now - t0
                turn.ok = True
                return turn


async def sse_turn(port: int, token: str, message: str, conversation_id: int | None, timeout: float = 60.0) -> Turn:
    """POST /api/chat/stream over a raw HTTP/1.1 connection; parse the chunked SSE body as it arrives."""
    body = json.dumps({"client_message_id": str(uuid.uuid4()), "conversation_id": conversation_id,
                       "message": message, "context": {}}).encode()
    head = (f"POST /api/chat/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Token {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    turn = Turn()
    texts: list[str] = []
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + body)
        async with asyncio.timeout(timeout):
            status = await reader.readline()
            if b" 200 " not in status:
                turn.error = status.decode().strip()
                return turn
            chunked = False
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
                    chunked = True
            buf = b""
            while True:
                if chunked:
                    size = int((await reader.readline()).strip() or b"0", 16)
                    if size == 0:
                        break
                    data = await reader.readexactly(size + 2)
                    buf += data[:-2]
                else:
                    data = await reader.read(65536)
                    if not data:
                        break
                    buf += data
                now = time.perf_counter()
                while b"\n\n" in buf:
                    block, buf = buf.split(b"\n\n", 1)
                    payload = b"".join(ln[6:] for ln in block.split(b"\n") if ln.startswith(b"data: "))
                    if not payload:
                        continue
                    ev = json.loads(payload)
                    if turn.first_event is None:
                        turn.first_event = now - t0
                        turn.run_id, turn.conversation_id = ev.get("run_id", ""), ev.get("conversation_id")
                    turn.events += 1
                    if "seq" in ev:
                        turn.check.add(ev["seq"])
                    if ev["type"] == "text_delta":
                        texts.append(ev["text"])
                        if turn.first_text is None:
                            turn.first_text = now - t0
                    if ev["type"] in TERMINAL:
                        turn.end = now - t0
                        turn.ok = ev["type"] == "complete"
                        if turn.ok:
                            turn.text_matches = "".join(texts) == ev["payload"]["message"]
                        return turn
    finally:
        writer.close()
    return turn


# ---- statistics ---------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float | None:
    """The p-th percentile (nearest rank) of `values`."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 2)


def integrity(turns: list[Turn]) -> dict[str, int]:
    """Totals of lost (gap), duplicated and out-of-order events, failed turns and text mismatches."""
    return {
        "turns": len(turns),
        "failed": sum(1 for t in turns if not t.ok),
        "gaps": sum(t.check.gaps for t in turns),
        "duplicates": sum(t.check.duplicates for t in turns),
        "out_of_order": sum(t.check.out_of_order for t in turns),
        "text_mismatch": sum(1 for t in turns if not t.text_matches),
        "missing_terminal": sum(1 for t in turns if t.end is None),
    }


def latency(turns: list[Turn]) -> dict[str, float | None]:
    fe = [t.first_event for t in turns if t.first_event is not None]
    ft = [t.first_text for t in turns if t.first_text is not None]
    end = [t.end for t in turns if t.end is not None]
    return {"n": len(fe), "first_event_p50_ms": ms(pct(fe, 50)), "first_event_p99_ms": ms(pct(fe, 99)),
            "first_text_p50_ms": ms(pct(ft, 50)), "first_text_p99_ms": ms(pct(ft, 99)),
            "turn_p50_ms": ms(pct(end, 50)), "turn_p99_ms": ms(pct(end, 99))}
