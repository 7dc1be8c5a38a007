"""Drive the Chainlit peer over socket.io as its web client does; print one JSON line per turn.

Run in Chainlit's virtualenv (python-socketio comes with it): `python client.py <port>`; then each line
`<tokens>` on stdin runs one turn (`client_message` -> `stream_token` x N -> `task_end`) and prints its JSON line,
so the bench can interleave Chainlit's turns with its own and read each server's CPU around them.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from datetime import UTC, datetime

import socketio


async def main(port: int) -> None:
    sio = socketio.AsyncClient(reconnection=False)
    state: dict[str, object] = {}
    done = asyncio.Event()
    connected = asyncio.Event()

    @sio.on("stream_start")  # the first token arrives as the new message's content
    async def on_start(data: dict[str, object]) -> None:
        await on_token({"token": data.get("output") or ""})

    @sio.on("stream_token")
    async def on_token(data: dict[str, object]) -> None:
        now = time.perf_counter()
        if state.get("first") is None:
            state["first"] = now
        state["n"] = int(state.get("n", 0)) + 1  # type: ignore[call-overload]
        state["text"].append(data["token"])  # type: ignore[attr-defined]

    @sio.on("task_end")
    async def on_end(data: object) -> None:
        if state.get("sent") is not None:
            state["end"] = time.perf_counter()
            done.set()
        else:
            connected.set()

    await sio.connect(f"http://127.0.0.1:{port}", socketio_path="/ws/socket.io", transports=["websocket"],
                      auth={"sessionId": str(uuid.uuid4()), "clientType": "webapp"})
    await sio.emit("connection_successful")
    await asyncio.wait_for(connected.wait(), 30)
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
        tokens = int(line)
        state.clear()
        state["text"] = []
        done.clear()
        step = {"id": str(uuid.uuid4()), "createdAt": datetime.now(UTC).isoformat(), "output": f"bench:tokens={tokens}",
                "type": "user_message", "name": "User"}
        t0 = time.perf_counter()
        state["sent"] = t0
        await sio.emit("client_message", {"message": step, "fileReferences": None})
        await asyncio.wait_for(done.wait(), 120)
        first, end = state.get("first"), state["end"]
        print(json.dumps({"events": state.get("n", 0), "text": "".join(state["text"]),  # type: ignore[arg-type]
                          "first_event": (first - t0) if first else None, "end": end - t0}), flush=True)  # type: ignore[operator]
    await sio.disconnect()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
