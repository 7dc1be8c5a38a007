"""A complete program client of pagechat's websocket (protocol v1): send a message, print the answer as it streams,
answer tool approvals, and survive a dropped connection without losing or repeating anything.

    pip install websockets
    python ws_client.py --url ws://127.0.0.1:8000/api/ws/ --token <key> "calculate 6*7"
    python ws_client.py --url ... --token ... --conversation 12 --page streams_list --approve "rename stream 1 to Oncology Watch"
    python ws_client.py --url ... --token ... --resume <run_id> --after 3     # follow a run from after seq 3

`--token`: a DRF token (`manage.py drf_create_token <user>`); PAGECHAT_URL and PAGECHAT_TOKEN are read when the
flags are absent. What it relies on is the protocol's contract (docs/protocol.md): every event of a run has a gapless
`seq`, the first is the `status` acknowledgement, exactly one terminal event (`complete`, `error`, `cancelled`) ends
it, and after a disconnect `chat.resume` with the last `seq` received replays the rest; a resend of the same
`client_message_id` never starts a second run. Exit status: 0 on `complete`, 1 on `error` or `cancelled`.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import uuid
from typing import Any

import websockets

TERMINAL = ("complete", "error", "cancelled")


TOOL_MARKER = re.compile(r"\[\[tool:(\d+)\]\]")  # where the server puts the card of the run's Nth tool call


class Run:
    """What this client knows of one run: its id, the last seq printed, its tool calls, and how it ended."""

    def __init__(self, run_id: str | None = None, after_seq: int = 0) -> None:
        self.run_id = run_id
        self.seq = after_seq
        self.tools: list[str] = []  # each tool call as a line, in the order the calls started
        self.terminal: dict[str, Any] | None = None

    def card(self, marker: re.Match[str]) -> str:
        index = int(marker.group(1))
        return self.tools[index] if index < len(self.tools) else marker.group(0)  # resumed after its tool_start: as sent


def show(run: Run, event: dict[str, Any], approve: bool | None) -> dict[str, Any] | None:
    """Print one event; the frame to send back, if any (the answer to a tool approval)."""
    kind = event["type"]
    if kind == "text_delta":  # a tool's marker is never split across deltas
        print(TOOL_MARKER.sub(run.card, event["text"]), end="", flush=True)
    elif kind == "tool_start":
        run.tools.append(f"[tool {event['tool']} {json.dumps(event['input'])}]")
    elif kind == "tool_approval":
        answer = approve if approve is not None else input(f"\nRun {event['tool']} {json.dumps(event['input'])}? [y/N] ").lower() == "y"
        print(f"\n[{'approved' if answer else 'denied'}: {event['tool']}]", flush=True)
        return {"type": "chat.approve", "run_id": event["run_id"], "tool_use_id": event["tool_use_id"], "approved": answer}
    elif kind == "complete":
        payload = event["payload"]
        print()
        for value in payload.get("suggested_values") or []:
            print(f"[suggestion] {value['label']}")
        for action in payload.get("suggested_actions") or []:
            print(f"[button] {action['label']} ({action['handler']}: {action['action']})")
        print(f"[conversation {payload['conversation_id']}, run {payload['run_id']}]")
    elif kind in ("error", "cancelled"):
        print(f"\n[{kind}{': ' + event['code'] + ' - ' + event['message'] if kind == 'error' else ''}]", file=sys.stderr)
    return None


async def follow(ws: Any, run: Run, approve: bool | None) -> None:
    """Read the run's events until its terminal one; a replayed event (seq already printed) is skipped."""
    async for raw in ws:
        event = json.loads(raw)
        if "seq" not in event:  # a frame-level error: it answers a frame, it is not an event of the run
            if event.get("type") == "error" and event.get("code") == "resync":
                raise SystemExit("the run's events are gone: read the conversation over REST instead")
            if event.get("type") == "error":
                raise SystemExit(f"refused: {event.get('code')}: {event.get('message')}")
            continue
        if run.run_id is None:
            run.run_id = event["run_id"]
        if event["run_id"] != run.run_id or event["seq"] <= run.seq:
            continue
        run.seq = event["seq"]
        reply = show(run, event, approve)
        if reply is not None:
            await ws.send(json.dumps(reply))
        if event["type"] in TERMINAL:
            run.terminal = event
            return


async def chat(url: str, token: str, first_frame: dict[str, Any] | None, run: Run, approve: bool | None, attempts: int = 6) -> Run:
    """Send `first_frame` (or resume `run`) and follow the run to its end, reconnecting after a dropped connection."""
    headers = {"Authorization": f"Token {token}"}
    for attempt in range(attempts):
        try:
            async with websockets.connect(url, additional_headers=headers) as ws:
                if run.run_id is not None:  # reconnected (or asked to): the events after the last one printed
                    await ws.send(json.dumps({"type": "chat.resume", "run_id": run.run_id, "after_seq": run.seq}))
                elif first_frame is not None:  # sent again after a drop before any event: the same client_message_id
                    await ws.send(json.dumps(first_frame))  # never starts a second run, the socket follows the first
                await follow(ws, run, approve)
                return run
        except (OSError, websockets.ConnectionClosed) as exc:
            print(f"\n[connection lost ({exc.__class__.__name__}); reconnecting]", file=sys.stderr)
            await asyncio.sleep(min(0.5 * 2 ** attempt, 8))
    raise SystemExit("gave up reconnecting")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("message", nargs="?", default="")
    parser.add_argument("--url", default=os.environ.get("PAGECHAT_URL", "ws://127.0.0.1:8000/api/ws/"))
    parser.add_argument("--token", default=os.environ.get("PAGECHAT_TOKEN"))
    parser.add_argument("--conversation", type=int, help="continue this conversation (default: start one)")
    parser.add_argument("--page", default="", help="the registered page to talk on (context.current_page)")
    parser.add_argument("--approve", action="store_true", default=None, help="approve every tool that asks")
    parser.add_argument("--deny", action="store_false", dest="approve", help="deny every tool that asks")
    parser.add_argument("--resume", metavar="RUN_ID", help="follow this run instead of sending a message")
    parser.add_argument("--after", type=int, default=0, help="with --resume: the last seq already seen")
    parser.add_argument("--retries", type=int, default=6, help="connection attempts before giving up")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("--token (or PAGECHAT_TOKEN) is required")
    frame = None
    if not args.resume:
        if not args.message:
            parser.error("a message (or --resume RUN_ID)")
        frame = {"type": "chat.send", "client_message_id": str(uuid.uuid4()), "conversation_id": args.conversation,
                 "message": args.message, "context": {"current_page": args.page} if args.page else {}}
    run = asyncio.run(chat(args.url, args.token, frame, Run(args.resume, args.after), args.approve, attempts=max(args.retries, 1)))
    return 0 if run.terminal is not None and run.terminal["type"] == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
