"""A scripted stand-in for the chat backend, for browser tests of the tray alone.

It speaks protocol v1 (DESIGN.md section 5) over a `websockets` server and serves, over
`http.server`, the real static files, a test page built from the real `chat/tray.html`
template, and a tiny in-memory conversations REST API. Each test sets `server.script`:
an async function `(run, frame)` that emits events through `run`; runs live in tasks that
outlive sockets, keep an ordered log and replay it on `chat.resume`, like the real server.

Run it by hand with `python tests/e2e/fake_protocol_server.py` to poke at the tray.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[2]
STATIC_ROOTS = (ROOT / "chat" / "static", ROOT / "pages" / "demo" / "static", ROOT / "static")  # the apps' static files, then the site's
CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".png": "image/png", ".svg": "image/svg+xml"}

Script = Callable[["FakeRun", dict[str, Any]], Awaitable[None]]

# A page script loaded by the harness page to exercise the public registry API.
PAGE_SCRIPT = """
import { registerPageHandlers, setContext, onTrayReady } from "/static/chat/registry.js";

function el(tag, text) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; }

registerPageHandlers({
  payloadHandlers: {
    schema_proposal: {
      title: "Schema Proposal",
      width: "480px",
      render(data) {
        const dl = el("dl"); dl.className = "schema-card";
        for (const [k, v] of Object.entries(data.proposed_changes || {})) { dl.append(el("dt", k), el("dd", String(v))); }
        return dl;
      },
      onAccept(data) { document.getElementById("stream-name").value = data.proposed_changes.stream_name; window.__accepted = data; },
      onReject() { window.__rejected = true; },
    },
  },
  clientActions: {
    switch_tab(data, ctx) {
      document.getElementById("active-tab").textContent = data.tab;
      setContext({ active_tab: data.tab });
      window.__actionCtx = { hasTray: !!ctx.tray, hasSend: typeof ctx.send === "function" };
    },
  },
});
setContext({ active_tab: "semantic" });
onTrayReady(() => { window.__trayReady = true; });
"""

# A host's own classic (non-module) script, loaded with `defer` after the tray tag: it uses only
# the global API, registers a renderer with a header icon and Accept/Reject, and listens to the
# tray's events.
HOST_SCRIPT = """
(function () {
  var api = window.pagechat;
  window.__hostEvents = [];
  ["pagechat:reply", "pagechat:payload-outcome"].forEach(function (name) {
    document.addEventListener(name, function (e) {
      window.__hostEvents.push(name + ":" + (e.detail.outcome || e.detail.message.status));
    });
  });
  api.registerPayloadRenderer("host_chart", function (data, payload) {
    var figure = document.createElement("figure");
    figure.className = "host-chart";
    (data.points || []).forEach(function (p) {
      var row = document.createElement("div");
      row.className = "host-chart__bar";
      row.textContent = p.label + ": " + p.value;
      figure.append(row);
    });
    return figure;
  }, {
    title: "Host chart",
    icon: "chart",
    width: "380px",
    onAccept: function (data, payload) { window.__hostAccepted = payload.payload_id; },
    onReject: function () { return false; },  // keeps the panel open, outcome unrecorded
  });
  var errors = [];
  try { api.registerPayloadRenderer("bad", "not a function"); } catch (e) { errors.push(e.name); }
  try { api.registerPayloadRenderer("bad", function () {}, { onAcept: function () {} }); } catch (e) { errors.push(e.name); }
  try { api.registerPayloadRenderer("bad", function () {}, { icon: "<svg onload=x>" }); } catch (e) { errors.push(e.name); }
  window.__hostRegistrationErrors = errors;
})();
"""

# The site's own renderers, as the demo's base template loads them (only the public API).
SITE_RENDERERS = "/static/pages/chat_renderers.js"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class FakeRun:
    """One assistant turn: an ordered event log plus the sockets currently following it."""

    server: "FakeProtocolServer"
    run_id: str
    conversation_id: int
    client_message_id: str
    log: list[dict[str, Any]] = field(default_factory=list)
    subscribers: set["_Client"] = field(default_factory=set)
    approvals: dict[str, asyncio.Future[bool]] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None
    done: bool = False
    text: str = ""

    def emit(self, type_: str, **fields: Any) -> dict[str, Any]:
        """Append an event to the log and hand it to every follower (synchronous: no reordering)."""
        event = {"type": type_, "run_id": self.run_id, "seq": len(self.log) + 1, "conversation_id": self.conversation_id, **fields}
        self.log.append(event)
        if type_ == "text_delta":
            self.text += fields.get("text", "")
        if event["seq"] in self.server.lose_live_seqs:
            return event  # logged but lost on the wire: the tray must notice the gap
        for client in list(self.subscribers):
            client.push(event)
        return event

    async def stream_text(self, text: str, chunk: int = 6, delay: float = 0.01) -> None:
        """Emit `text` as several text_delta events."""
        for i in range(0, len(text), chunk):
            self.emit("text_delta", text=text[i : i + chunk])
            await asyncio.sleep(delay)

    async def gate(self, name: str, timeout: float = 20) -> None:
        """Wait until the test calls server.open_gate(name)."""
        await asyncio.wait_for(self.server._gate(name).wait(), timeout)

    async def wait_approval(self, tool_use_id: str, timeout: float = 20) -> bool:
        fut = self.approvals.setdefault(tool_use_id, asyncio.get_running_loop().create_future())
        return await asyncio.wait_for(fut, timeout)

    async def drop_connections(self) -> None:
        """Simulate a network drop: close every socket following this run."""
        for client in list(self.subscribers):
            await client.ws.close(code=1012, reason="test drop")
        self.subscribers.clear()

    def complete(self, **payload: Any) -> dict[str, Any]:
        """Emit `complete` with a full payload (defaults filled) and store the assistant message."""
        message_id = self.server._next_id()
        body = {
            "message": self.text,
            "message_html": "",
            "suggested_values": [],
            "suggested_actions": [],
            "custom_payload": None,
            "tool_history": [],
            "conversation_id": self.conversation_id,
            "message_id": message_id,
            "run_id": self.run_id,
            "usage": {"input_tokens": 10, "output_tokens": 20},
            **payload,
        }
        placeholder = self.server._placeholder(self)
        if placeholder is not None:  # the real server fills in its "streaming" placeholder
            placeholder.update(content=body["message"], message_html=body["message_html"], status="complete",
                               tool_history=body["tool_history"], custom_payload=body["custom_payload"],
                               suggested_values=body["suggested_values"], suggested_actions=body["suggested_actions"],
                               stop_reason=body.get("stop_reason", ""))
        else:
            self.server._store_message(self.conversation_id, "assistant", body["message"], body)
        return self.emit("complete", payload=body)


class _Client:
    """One websocket; events go through a queue so emitters never await a slow socket."""

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def push(self, event: dict[str, Any]) -> None:
        self.queue.put_nowait(event)

    async def writer(self) -> None:
        while True:
            event = await self.queue.get()
            try:
                await self.ws.send(json.dumps(event))
            except ConnectionClosed:
                return


class FakeProtocolServer:
    """Start with `.start()`; `http_url`/`ws_url` then point at it. Thread-safe knobs for tests."""

    def __init__(self) -> None:
        self.script: Script | None = None
        self.frames: list[dict[str, Any]] = []  # every client frame received, in order
        self.http_requests: list[dict[str, Any]] = []
        self.runs: dict[str, FakeRun] = {}
        self.by_client_id: dict[str, FakeRun] = {}
        self.conversations: dict[int, dict[str, Any]] = {}
        self.list_queries: list[dict[str, str]] = []  # the query of each conversation list asked for
        self.detail_queries: list[dict[str, str]] = []  # the query of each conversation read
        self.resume_overlap = 0  # replay this many already-seen events again (duplicates test)
        self.resync_on_resume = False
        self.drop_next_send = False  # close the socket on the next chat.send without starting a run
        self.next_send_error: dict[str, str] | None = None
        self.refuse_connections = False
        self.lose_live_seqs: set[int] = set()  # events with these seqs are logged but never sent live
        self.streaming_placeholders = False  # store an assistant "streaming" message at turn start, like the real server
        self.extra_config: dict[str, Any] = {}  # more tray config keys, as the chat_tray tag adds them (page_title, starters)
        self.connections = 0
        self._ids = 100
        self._gates: dict[str, asyncio.Event] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._http: ThreadingHTTPServer | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    # ---- lifecycle ----------------------------------------------------------------------------

    def start(self) -> "FakeProtocolServer":
        self._thread = threading.Thread(target=self._run_loop, name="fake-ws", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake websocket server did not start")
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _make_http_handler(self))
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, name="fake-http", daemon=True).start()
        self.http_url = f"http://127.0.0.1:{self._http.server_address[1]}"
        return self

    def stop(self) -> None:
        if self._http:
            self._http.shutdown()
            self._http.server_close()
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread:
            self._thread.join(5)

    def _run_loop(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        def down(connection: ServerConnection, request: Any) -> Any:
            """A server that is down (refuse_connections): every handshake fails, so the client's socket never opens."""
            return connection.respond(503, "test: down\n") if self.refuse_connections else None

        async with serve(self._handle, "127.0.0.1", 0, process_request=down) as ws_server:
            port = next(iter(ws_server.sockets)).getsockname()[1]
            self.ws_url = f"ws://127.0.0.1:{port}/ws/chat/"
            self._ready.set()
            await self._stop.wait()

    # ---- test helpers (call from the test thread) ------------------------------------------------

    def open_gate(self, name: str) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(lambda: self._gate(name).set())

    def frames_of(self, type_: str) -> list[dict[str, Any]]:
        return [f for f in list(self.frames) if f.get("type") == type_]

    def wait_for_frame(self, type_: str, count: int = 1, timeout: float = 10) -> list[dict[str, Any]]:
        """Block until at least `count` frames of `type_` arrived; return them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.frames_of(type_)
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"expected {count} {type_} frame(s), got {self.frames_of(type_)}")

    def add_conversation(self, title: str, messages: list[dict[str, Any]], page: str = "reports", updated_at: str | None = None) -> int:
        cid = self._next_id()
        self.conversations[cid] = {"id": cid, "title": title, "page": page, "updated_at": _now(), "messages": []}
        for m in messages:
            self._store_message(cid, m["role"], m.get("content", ""), m)
        self.conversations[cid]["updated_at"] = updated_at or _now()  # when it was last active
        return cid

    # ---- internals --------------------------------------------------------------------------------

    def _gate(self, name: str) -> asyncio.Event:
        return self._gates.setdefault(name, asyncio.Event())

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _store_message(self, cid: int, role: str, content: str, extra: dict[str, Any]) -> None:
        conv = self.conversations.setdefault(cid, {"id": cid, "title": "", "page": "reports", "updated_at": _now(), "messages": []})
        conv["messages"].append(
            {
                "id": extra.get("message_id") or self._next_id(),
                "role": role,
                "content": content,
                "message_html": extra.get("message_html", ""),
                "suggested_values": extra.get("suggested_values", []),
                "suggested_actions": extra.get("suggested_actions", []),
                "custom_payload": extra.get("custom_payload"),
                "tool_history": extra.get("tool_history", []),
                "status": extra.get("status", "complete"),
                "stop_reason": extra.get("stop_reason", ""),
                "created_at": _now(),
            }
        )
        conv["title"] = conv["title"] or content[:40]
        conv["updated_at"] = _now()

    def _placeholder(self, run: FakeRun) -> dict[str, Any] | None:
        conv = self.conversations.get(run.conversation_id)
        for m in (conv or {}).get("messages", []):
            if m.get("_run_id") == run.run_id and m["status"] == "streaming":
                return m
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        client = _Client(ws)
        writer = asyncio.create_task(client.writer())
        try:
            async for raw in ws:
                try:
                    frame = json.loads(raw)
                except ValueError:
                    client.push({"type": "error", "code": "bad_json", "message": "Not JSON."})
                    continue
                self.frames.append(frame)
                handler = FRAME_HANDLERS.get(frame.get("type"))
                if handler is None:
                    client.push({"type": "error", "code": "unknown_type", "message": "Unknown frame type."})
                    continue
                await handler(self, client, frame)
        except ConnectionClosed:
            pass
        finally:
            for run in self.runs.values():
                run.subscribers.discard(client)
            writer.cancel()

    async def _on_send(self, client: _Client, frame: dict[str, Any]) -> None:
        if self.drop_next_send:
            self.drop_next_send = False
            await client.ws.close(code=1012, reason="test drop before ack")
            return
        if self.next_send_error:
            error, self.next_send_error = self.next_send_error, None
            client.push({"type": "error", **error})
            return
        existing = self.by_client_id.get(frame["client_message_id"])
        if existing:  # idempotent resend: follow the same run from the start
            self._follow(existing, client, after_seq=0)
            return
        cid = frame.get("conversation_id")
        if cid is not None and cid not in self.conversations:
            client.push({"type": "error", "code": "not_found", "message": "Conversation not found."})
            return
        if cid is None:
            cid = self._next_id()
            self.conversations[cid] = {"id": cid, "title": "", "page": frame.get("context", {}).get("current_page", ""), "updated_at": _now(), "messages": []}
        self._store_message(cid, "user", frame["message"], {})
        run = FakeRun(self, run_id=uuid.uuid4().hex, conversation_id=cid, client_message_id=frame["client_message_id"])
        self.runs[run.run_id] = run
        self.by_client_id[run.client_message_id] = run
        if self.streaming_placeholders:
            self._store_message(cid, "assistant", "", {"status": "streaming"})
            self.conversations[cid]["messages"][-1]["_run_id"] = run.run_id  # private: the real API has no run_id
        run.subscribers.add(client)
        run.task = asyncio.create_task(self._drive(run, frame))

    async def _drive(self, run: FakeRun, frame: dict[str, Any]) -> None:
        run.emit("status", message="Thinking…")
        try:
            if self.script is None:
                await run.stream_text(f"You said: {frame['message']}")
                run.complete()
            else:
                await self.script(run, frame)
        except asyncio.CancelledError:
            run.emit("cancelled")
        except Exception as exc:  # a broken script shows up as a run error, not a hang
            run.emit("error", code="internal", message=f"script failed: {exc!r}")
        finally:
            run.done = True

    def _follow(self, run: FakeRun, client: _Client, after_seq: int) -> None:
        start = max(0, after_seq - self.resume_overlap)
        for event in run.log[start:]:
            client.push(event)
        run.subscribers.add(client)

    async def _on_resume(self, client: _Client, frame: dict[str, Any]) -> None:
        run = self.runs.get(frame.get("run_id", ""))
        if run is None:  # like the real consumer, a refusal about a run names it
            client.push({"type": "error", "code": "not_found", "message": "No such run.", "run_id": frame.get("run_id")})
        elif self.resync_on_resume:
            client.push({"type": "error", "code": "resync", "message": "Reload the conversation.", "run_id": run.run_id})
        else:
            self._follow(run, client, int(frame.get("after_seq", 0)))

    async def _on_cancel(self, client: _Client, frame: dict[str, Any]) -> None:
        run = self.runs.get(frame.get("run_id", ""))
        if run is None:
            client.push({"type": "error", "code": "not_found", "message": "No such run."})
        elif run.task and not run.done:
            run.task.cancel()

    async def _on_approve(self, client: _Client, frame: dict[str, Any]) -> None:
        run = self.runs.get(frame.get("run_id", ""))
        if run is None:
            client.push({"type": "error", "code": "not_found", "message": "No such run."})
            return
        fut = run.approvals.setdefault(frame["tool_use_id"], asyncio.get_running_loop().create_future())
        if not fut.done():
            fut.set_result(bool(frame.get("approved")))


FRAME_HANDLERS: dict[str, Callable[[FakeProtocolServer, _Client, dict[str, Any]], Awaitable[None]]] = {
    "chat.send": FakeProtocolServer._on_send,
    "chat.resume": FakeProtocolServer._on_resume,
    "chat.cancel": FakeProtocolServer._on_cancel,
    "chat.approve": FakeProtocolServer._on_approve,
}


# ---- HTTP: static files, the harness page, conversations REST --------------------------------------


def render_page(server: FakeProtocolServer, query: dict[str, list[str]], path: str) -> tuple[str, str]:
    """The harness page: the real tray template, a little page content, optionally a page script."""
    from django.template.loader import render_to_string

    def flag(name: str) -> bool:
        return query.get(name, ["0"])[0] == "1"

    page = query.get("page", ["reports"])[0]
    nonce = secrets.token_urlsafe(16)
    config = {
        "page": page,
        "context": {"report_id": 7, "current_page": page},
        "ws_url": server.ws_url,
        "api_base": "/api/",
        "is_staff": flag("staff"),
        "offline": flag("offline"),
        "user": query.get("user", ["alice"])[0],  # who is signed in (another user in the same tab: ?user=bob)
        "csrf_token": "test-csrf-token",
        **server.extra_config,
    }
    tray = render_to_string("chat/tray.html", {"config": config, "csp_nonce": nonce})
    order = query.get("page_script", ["before"])[0]
    page_script = f'<script type="module" src="/harness/page.js" nonce="{nonce}"></script>'
    # As the demo's include: the site's renderers before the tray; a host's classic script after it.
    site_renderers = f'<script type="module" src="{SITE_RENDERERS}" nonce="{nonce}"></script>'
    host_script = f'<script defer src="/harness/host.js" nonce="{nonce}"></script>'
    html = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Harness {path}</title><link rel="icon" href="data:,">{page_script if order == "before" else ""}</head>
<body>
<main class="harness">
  <h1>Harness page {path}</h1>
  <p id="target">A paragraph the assistant can highlight.</p>
  <label>Stream name <input id="stream-name" value="old name"></label>
  <p>Active tab: <span id="active-tab">semantic</span></p>
</main>
{site_renderers}
{tray}
{host_script}
{page_script if order == "after" else ""}
</body></html>"""
    return html, nonce


def _make_http_handler(server: FakeProtocolServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            self._send(status, json.dumps(data).encode(), "application/json")

        def _record(self) -> None:
            server.http_requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers)})

        def do_GET(self) -> None:
            self._record()
            url = urlsplit(self.path)
            path = url.path
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}  # the real API's q, limit, offset and before
            if path.startswith("/static/"):
                found = [f for r in STATIC_ROOTS if r in (f := (r / path.removeprefix("/static/")).resolve()).parents and f.is_file()]
                if found:
                    self._send(200, found[0].read_bytes(), CONTENT_TYPES.get(found[0].suffix, "application/octet-stream"))
                else:
                    self._send(404, b"not found", "text/plain")
            elif path == "/harness/page.js":
                self._send(200, PAGE_SCRIPT.encode(), "text/javascript")
            elif path == "/harness/host.js":
                self._send(200, HOST_SCRIPT.encode(), "text/javascript")
            elif path == "/api/conversations/":
                server.list_queries.append(query)
                q = query.get("q", "").strip().lower()
                found = [c for c in server.conversations.values()
                         if not q or q in c["title"].lower() or any(q in str(m.get("content", "")).lower() for m in c["messages"])]
                # the real API's order: pinned first (the latest pinned first), then by activity
                items = sorted(({k: c[k] for k in ("id", "title", "page", "updated_at")} | {"pinned": "pinned_at" in c} for c in found),
                               key=lambda c: (server.conversations[c["id"]].get("pinned_at", 0), c["updated_at"], c["id"]), reverse=True)
                start = int(query.get("offset", 0))
                self._json(200, items[start:start + int(query["limit"])] if "limit" in query else items[start:])
            elif m := re.fullmatch(r"/api/conversations/(\d+)/", path):
                conv = server.conversations.get(int(m.group(1)))
                if conv is None:
                    self._json(404, {"detail": "Not found."})
                else:
                    messages = [{k: v for k, v in m.items() if not k.startswith("_")} for m in conv["messages"]]
                    server.detail_queries.append(query)
                    if "before" in query:
                        messages = [m for m in messages if m["id"] < int(query["before"])]
                    earlier = "limit" in query and len(messages) > int(query["limit"])
                    if "limit" in query:
                        messages = messages[-int(query["limit"]):]
                    self._json(200, {"id": conv["id"], "title": conv["title"], "messages": messages, "has_earlier": earlier})
            elif path == "/favicon.ico":
                self._send(404, b"", "text/plain")
            else:
                html, nonce = render_page(server, parse_qs(url.query), path)
                csp = (
                    f"default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
                    f"img-src 'self' data:; connect-src 'self' {server.ws_url.rsplit('/ws/', 1)[0]}; "
                    "object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
                )
                self._send(200, html.encode(), "text/html; charset=utf-8", {"Content-Security-Policy": csp})

        def do_PATCH(self) -> None:
            """Marking a message (feedback, a proposal's outcome) or renaming a conversation: accepted, echoed."""
            self._record()
            path = urlsplit(self.path).path
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.headers.get("X-CSRFToken") != "test-csrf-token":
                self._json(403, {"detail": "CSRF Failed"})
            elif m := re.fullmatch(r"/api/(messages|conversations)/(\d+)/", path):
                if m.group(1) == "conversations" and (conv := server.conversations.get(int(m.group(2)))) is not None:
                    if "pinned" in body:  # kept, like the real API: the list is ordered by it
                        if body["pinned"]:
                            conv["pinned_at"] = time.monotonic()
                        else:
                            conv.pop("pinned_at", None)
                    conv["title"] = body.get("title", conv["title"])
                self._json(200, {"id": int(m.group(2)), **body})
            else:
                self._json(404, {"detail": "Not found."})

        def do_DELETE(self) -> None:
            self._record()
            m = re.fullmatch(r"/api/conversations/(\d+)/", urlsplit(self.path).path)
            if self.headers.get("X-CSRFToken") != "test-csrf-token":
                self._json(403, {"detail": "CSRF Failed"})
            elif m and server.conversations.pop(int(m.group(1)), None) is not None:
                self._send(204, b"", "application/json")
            else:
                self._json(404, {"detail": "Not found."})

    return Handler


def _setup_django() -> None:
    import django
    from django.conf import settings

    if not settings.configured:
        sys.path.insert(0, str(ROOT))
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        django.setup()


if __name__ == "__main__":
    _setup_django()
    srv = FakeProtocolServer().start()
    print(f"harness page: {srv.http_url}/?offline=1&staff=1   (websocket {srv.ws_url})")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        srv.stop()
