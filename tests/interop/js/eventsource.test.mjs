// A WHATWG EventSource client (the `eventsource` package) on the run resume endpoint: after a
// finished run the server answers the reconnect (Last-Event-ID at the terminal event) with 204,
// so the client stops; before the fix it reconnected every few seconds forever.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EventSource } from "eventsource";
import { BASE, auth, uid } from "./helpers.mjs";

test("after a finished run, no reconnect within 10 s", async () => {
  const started = await fetch(`${BASE}/api/chat/stream`, {
    method: "POST", headers: { ...auth(), "Content-Type": "application/json" },
    body: JSON.stringify({ client_message_id: uid("es"), message: "hello there", context: {} }),
  });
  assert.equal(started.status, 200);
  const body = await started.text();
  const runId = JSON.parse(body.split("\n").find((l) => l.startsWith("data: ")).slice(6)).run_id;

  const requests = [];
  const events = [];
  const source = new EventSource(`${BASE}/api/chat/runs/${runId}/events`, {
    fetch: (input, init) => {
      requests.push({ lastEventId: init.headers["Last-Event-ID"] ?? init.headers["last-event-id"] ?? null, at: Date.now() });
      return fetch(input, { ...init, headers: { ...init.headers, ...auth() } });
    },
  });
  source.onmessage = (e) => events.push({ id: e.lastEventId, data: JSON.parse(e.data) });
  const t0 = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 10_500));
  const state = source.readyState;
  source.close();
  const terminal = events.at(-1);
  assert.equal(terminal.data.type, "complete");
  assert.equal(terminal.id, `${runId}:${terminal.data.seq}`);
  // the first request replays the run; the browser-style reconnect after it gets 204 and the client stops
  assert.equal(requests.length, 2, JSON.stringify(requests));
  assert.equal(requests[1].lastEventId, terminal.id);
  assert.equal(state, EventSource.CLOSED);
  assert.ok(Date.now() - t0 >= 10_000);
});
