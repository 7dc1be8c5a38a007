// The protocol v1 client (chat/static/chat/protocol.js) against a fake WebSocket: no browser, no DOM.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { ProtocolClient, TERMINAL_EVENTS, chatSendFrame, uuid4 } from "../../chat/static/chat/protocol.js";
import { BACKOFF, resolveSocketUrl } from "../../chat/static/chat/socket.js";
import { event, fakeClock, fakeNetwork, recordingHooks, silentLogger } from "./fakes.mjs";

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const LOCATION = { protocol: "https:", host: "example.test" };

function setup({ seen, backoff } = {}) {
  const network = fakeNetwork();
  const clock = fakeClock();
  const { hooks, calls, named } = recordingHooks();
  const client = new ProtocolClient("/api/ws/", hooks, {
    seen,
    WebSocket: network.WebSocket,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    random: () => 0.5, // no jitter: delays are exactly the backoff curve
    location: LOCATION,
    backoff,
    logger: silentLogger,
  });
  const events = () => named("onEvent").map(([, e]) => `${e.seq}:${e.type}`);
  return { network, clock, client, calls, named, events };
}

function send(client, message = "hello") {
  return client.start(chatSendFrame({ message, conversationId: null, context: { current_page: "reports" } }));
}

/** Start a run and let the server acknowledge it as `runId` (status, seq 1). */
function acknowledged(t, runId = "run-1") {
  send(t.client);
  t.network.last.accept();
  t.network.last.push(event(runId, 1, "status", { message: "Thinking…" }));
  return runId;
}

describe("frames", () => {
  test("chat.send carries a fresh uuid4 client_message_id and only the fields given", () => {
    const a = chatSendFrame({ message: "hi", conversationId: 3, context: { x: 1 }, interactionType: "value_selected" });
    const b = chatSendFrame({ message: "hi" });
    assert.match(a.client_message_id, UUID4);
    assert.notEqual(a.client_message_id, b.client_message_id);
    assert.deepEqual({ ...a, client_message_id: "id" }, {
      type: "chat.send", client_message_id: "id", conversation_id: 3, message: "hi", context: { x: 1 }, interaction_type: "value_selected",
    });
    assert.equal("action_metadata" in b, false);
    const c = chatSendFrame({ message: "Save", interactionType: "action_executed", actionMetadata: { action_identifier: "save", token: "t" } });
    assert.deepEqual(c.action_metadata, { action_identifier: "save", token: "t" });
  });

  test("chat.send names attachments only when there are some", () => {
    assert.deepEqual(chatSendFrame({ message: "see", attachments: ["a1", "b2"] }).attachments, ["a1", "b2"]);
    assert.equal("attachments" in chatSendFrame({ message: "see", attachments: [] }), false);
    assert.equal("attachments" in chatSendFrame({ message: "see" }), false);
  });

  test("uuid4 is RFC 4122 version 4", () => {
    for (let i = 0; i < 50; i += 1) assert.match(uuid4(), UUID4);
  });

  test("socket URLs resolve against the page's location", () => {
    assert.equal(resolveSocketUrl("/api/ws/", LOCATION), "wss://example.test/api/ws/");
    assert.equal(resolveSocketUrl("api/ws/", { protocol: "http:", host: "h:8000" }), "ws://h:8000/api/ws/");
    assert.equal(resolveSocketUrl("ws://other:1/ws/", LOCATION), "ws://other:1/ws/");
  });

  test("the terminal events are complete, cancelled and error", () => {
    assert.deepEqual([...TERMINAL_EVENTS].sort(), ["cancelled", "complete", "error"]);
  });
});

describe("a run", () => {
  test("the send goes out once the socket opens; the first event acknowledges it", () => {
    const t = setup();
    const run = send(t.client);
    assert.equal(t.network.sockets.length, 1);
    assert.equal(t.network.last.url, "wss://example.test/api/ws/");
    assert.deepEqual(t.network.frames(), []); // not open yet
    t.network.last.accept();
    assert.deepEqual(t.network.frames(), [run.frame]);
    assert.equal(t.client.run.runId, null);
    t.network.last.push(event("run-1", 1, "status"));
    assert.equal(run.runId, "run-1");
    assert.deepEqual(t.named("onAck").map(([, r]) => r.runId), ["run-1"]);
    assert.deepEqual(t.events(), ["1:status"]);
  });

  test("events are applied in seq order, each once; other runs' events are ignored", () => {
    const t = setup();
    acknowledged(t);
    const ws = t.network.last;
    ws.push(event("run-1", 2, "text_delta", { text: "a" }));
    ws.push(event("run-1", 2, "text_delta", { text: "a" })); // duplicate
    ws.push(event("run-1", 1, "status")); // older
    ws.push(event("run-other", 3, "text_delta", { text: "x" }));
    ws.push(event("run-1", 3, "text_delta", { text: "b" }));
    assert.deepEqual(t.events(), ["1:status", "2:text_delta", "3:text_delta"]);
    assert.deepEqual(t.named("onEvent").map(([, e]) => e.text ?? null), [null, "a", "b"]);
  });

  test("a gap asks once for the missing events and applies nothing out of order", () => {
    const t = setup();
    acknowledged(t);
    const ws = t.network.last;
    ws.push(event("run-1", 2, "text_delta", { text: "a" }));
    ws.push(event("run-1", 4, "text_delta", { text: "c" })); // seq 3 was lost
    ws.push(event("run-1", 5, "text_delta", { text: "d" })); // still behind the gap: no second request
    assert.deepEqual(t.network.framesOf("chat.resume"), [{ type: "chat.resume", run_id: "run-1", after_seq: 2 }]);
    assert.deepEqual(t.events(), ["1:status", "2:text_delta"]);
    for (const seq of [3, 4, 5]) ws.push(event("run-1", seq, "text_delta", { text: "x" })); // the replay
    assert.deepEqual(t.events(), ["1:status", "2:text_delta", "3:text_delta", "4:text_delta", "5:text_delta"]);
  });

  for (const type of ["complete", "cancelled", "error"]) {
    test(`${type} ends the run: no more events, no reconnect`, () => {
      const t = setup();
      acknowledged(t);
      const ws = t.network.last;
      ws.push(event("run-1", 2, type, type === "complete" ? { payload: { message: "done" } } : {}));
      assert.equal(t.client.run, null);
      assert.equal(t.client.following, false);
      const [, terminal, run] = t.named("onEvent").at(-1);
      assert.equal(terminal.type, type);
      assert.equal(run.runId, "run-1"); // the hook still learns which run ended
      ws.push(event("run-1", 3, "text_delta", { text: "late" }));
      assert.deepEqual(t.events(), ["1:status", `2:${type}`]);
      ws.drop();
      assert.equal(t.clock.pending, 0);
      assert.equal(t.client.connectionState, "idle");
      assert.equal(t.network.sockets.length, 1);
    });
  }

  test("non-JSON frames and frames without a type are ignored", () => {
    const t = setup();
    acknowledged(t);
    t.network.last.push("not json {");
    t.network.last.push({ seq: 2 });
    t.network.last.push([1, 2]);
    t.network.last.push(event("run-1", 2, "text_delta", { text: "ok" }));
    assert.deepEqual(t.events(), ["1:status", "2:text_delta"]);
  });

  test("a failing hook does not break the socket's handling of later frames", () => {
    const network = fakeNetwork();
    const seen = [];
    const client = new ProtocolClient("/ws/", {
      onEvent(e) {
        seen.push(e.seq);
        if (e.seq === 2) throw new Error("bug in a view");
      },
    }, { WebSocket: network.WebSocket, location: LOCATION, logger: silentLogger });
    client.start(chatSendFrame({ message: "x" }));
    network.last.accept();
    for (const seq of [1, 2, 3]) network.last.push(event("r", seq, "text_delta", { text: "t" }));
    assert.deepEqual(seen, [1, 2, 3]);
  });

  test("only one run at a time", () => {
    const t = setup();
    send(t.client);
    assert.throws(() => send(t.client), /already followed/);
    assert.throws(() => t.client.follow("run-2"), /already followed/);
  });
});

describe("reconnecting", () => {
  test("a drop before the ack resends the same chat.send (same client_message_id)", () => {
    const t = setup();
    const run = send(t.client);
    t.network.last.accept();
    t.network.last.drop(); // the send may or may not have reached the server
    assert.equal(t.client.connectionState, "reconnecting");
    assert.ok(t.clock.fire());
    assert.equal(t.network.sockets.length, 2);
    t.network.last.accept();
    const sends = t.network.framesOf("chat.send");
    assert.equal(sends.length, 2);
    assert.deepEqual(sends[1], sends[0]);
    assert.equal(sends[1].client_message_id, run.frame.client_message_id);
    t.network.last.push(event("run-1", 1, "status"));
    assert.equal(run.runId, "run-1");
  });

  test("a drop after the ack resumes after the last seq seen, and replayed duplicates are dropped", () => {
    const seen = new Map();
    const t = setup({ seen });
    acknowledged(t);
    t.network.last.push(event("run-1", 2, "text_delta", { text: "a" }));
    t.network.last.push(event("run-1", 3, "text_delta", { text: "b" }));
    t.network.last.drop();
    t.clock.fire();
    t.network.last.accept();
    assert.deepEqual(t.network.framesOf("chat.resume"), [{ type: "chat.resume", run_id: "run-1", after_seq: 3 }]);
    assert.equal(t.network.framesOf("chat.send").length, 1); // acknowledged: never resent
    // The server replays with some overlap.
    for (const seq of [2, 3, 4]) t.network.last.push(event("run-1", seq, "text_delta", { text: String(seq) }));
    t.network.last.push(event("run-1", 5, "complete", { payload: {} }));
    assert.deepEqual(t.events(), ["1:status", "2:text_delta", "3:text_delta", "4:text_delta", "5:complete"]);
    assert.equal(seen.get("run-1"), 5); // the store's map is where the client keeps its seqs
  });

  test("the reconnect banner state: reconnecting while a run is followed", () => {
    const t = setup();
    acknowledged(t);
    t.network.last.drop();
    assert.deepEqual(t.named("onConnectionState").at(-1).slice(1), ["reconnecting", true]);
    t.clock.fire();
    t.network.last.accept();
    assert.deepEqual(t.named("onConnectionState").at(-1).slice(1), ["open", true]);
    t.client.release();
    assert.deepEqual(t.named("onConnectionState").at(-1).slice(1), ["open", false]);
  });

  test("backoff doubles from 250 ms up to 5 s; after 12 failures the run is given up", () => {
    const t = setup();
    const run = send(t.client);
    for (let i = 0; i < BACKOFF.maxAttempts; i += 1) {
      t.network.last.drop(); // the connection attempt fails
      assert.ok(t.clock.fire());
    }
    assert.deepEqual(t.clock.delays, [250, 500, 1000, 2000, 4000, 5000, 5000, 5000, 5000, 5000, 5000, 5000]);
    assert.equal(t.named("onConnectionLost").length, 0);
    t.network.last.drop(); // the 12th retry failed too
    assert.equal(t.clock.pending, 0);
    assert.deepEqual(t.named("onConnectionLost").map(([, r]) => r), [run]);
    assert.equal(t.client.following, false);
    assert.equal(t.client.connectionState, "idle");
    assert.equal(t.network.sockets.length, 1 + BACKOFF.maxAttempts);
  });

  test("jitter spreads the delay between x0.75 and x1.25", () => {
    for (const [random, factor] of [[0, 0.75], [1, 1.25]]) {
      const network = fakeNetwork();
      const clock = fakeClock();
      const client = new ProtocolClient("/ws/", {}, { WebSocket: network.WebSocket, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, random: () => random, location: LOCATION });
      client.start(chatSendFrame({ message: "x" }));
      network.last.drop();
      assert.deepEqual(clock.delays, [250 * factor]);
    }
  });

  test("a successful open resets the backoff", () => {
    const t = setup();
    acknowledged(t);
    t.network.last.drop();
    t.clock.fire();
    t.network.last.drop();
    t.clock.fire();
    t.network.last.accept();
    t.network.last.drop();
    assert.deepEqual(t.clock.delays, [250, 500, 250]);
  });

  test("nothing followed, nothing queued: a drop does not reconnect", () => {
    const t = setup();
    acknowledged(t);
    t.client.release();
    t.network.last.drop();
    assert.equal(t.clock.pending, 0);
    assert.equal(t.client.connectionState, "idle");
  });

  test("following a run we did not start resumes from seq 0, or from what we saw", () => {
    const t = setup({ seen: new Map([["run-9", 4]]) });
    t.client.follow("run-8");
    t.network.last.accept();
    assert.deepEqual(t.network.frames(), [{ type: "chat.resume", run_id: "run-8", after_seq: 0 }]);
    t.network.last.push(event("run-8", 1, "text_delta", { text: "a" }));
    t.client.release();
    t.client.follow("run-9");
    assert.deepEqual(t.network.frames().at(-1), { type: "chat.resume", run_id: "run-9", after_seq: 4 });
  });
});

describe("cancel and approve", () => {
  test("a cancel before the ack is sent as soon as the run id is known", () => {
    const t = setup();
    send(t.client);
    t.network.last.accept();
    assert.equal(t.client.cancel(), true);
    assert.deepEqual(t.network.framesOf("chat.cancel"), []);
    t.network.last.push(event("run-1", 1, "status"));
    assert.deepEqual(t.network.framesOf("chat.cancel"), [{ type: "chat.cancel", run_id: "run-1" }]);
  });

  test("a cancel after the ack goes at once; approve names the run and the tool call", () => {
    const t = setup();
    acknowledged(t);
    t.client.approve("toolu_1", true);
    t.client.cancel();
    assert.deepEqual(t.network.frames().slice(1), [
      { type: "chat.approve", run_id: "run-1", tool_use_id: "toolu_1", approved: true },
      { type: "chat.cancel", run_id: "run-1" },
    ]);
  });

  test("without a run, cancel and approve send nothing", () => {
    const t = setup();
    assert.equal(t.client.cancel(), false);
    assert.equal(t.client.approve("toolu_1", true), false);
    assert.equal(t.network.sockets.length, 0);
  });

  test("late events of a released run never pass for the ack of the next send", () => {
    const t = setup();
    acknowledged(t, "old-run");
    t.client.cancel();
    t.client.release();
    const next = send(t.client);
    t.network.last.push(event("old-run", 2, "cancelled")); // the old run's end arrives now
    assert.equal(next.runId, null);
    t.network.last.push(event("new-run", 1, "status"));
    assert.equal(next.runId, "new-run");
    assert.deepEqual(t.events(), ["1:status", "1:status"]);
  });
});

describe("frame-level errors", () => {
  test("a refused send ends the run (busy, rate_limited, not_found, ...)", () => {
    const t = setup();
    const run = send(t.client);
    t.network.last.accept();
    t.network.last.push({ type: "error", code: "busy", message: "A reply is still running." });
    assert.equal(t.client.following, false);
    assert.deepEqual(t.named("onRefused").map(([, e, r]) => [e.code, r]), [["busy", run]]);
    assert.equal(t.named("onError").length, 0);
  });

  test("resync: the run cannot be replayed, the stored conversation is the truth", () => {
    const t = setup();
    acknowledged(t);
    t.network.last.push({ type: "error", code: "resync", message: "Reload.", run_id: "run-1" });
    assert.equal(t.client.following, false);
    assert.deepEqual(t.named("onUnavailable").map(([, e, r]) => [e.code, r.runId]), [["resync", "run-1"]]);
  });

  test("not_found for the followed run: gone, or never ours", () => {
    const t = setup();
    t.client.follow("someone-elses");
    t.network.last.accept();
    t.network.last.push({ type: "error", code: "not_found", message: "No such run.", run_id: "someone-elses" });
    assert.equal(t.client.following, false);
    assert.deepEqual(t.named("onUnavailable").map(([, e]) => e.code), ["not_found"]);
  });

  test("another error about the followed run re-resumes three times, then reports it", () => {
    const t = setup();
    acknowledged(t);
    for (let i = 0; i < 4; i += 1) t.network.last.push({ type: "error", code: "internal", message: "Lost it.", run_id: "run-1" });
    assert.deepEqual(t.network.framesOf("chat.resume").map((f) => f.after_seq), [1, 1, 1]);
    assert.deepEqual(t.named("onError").map(([, e]) => e.code), ["internal"]);
    assert.equal(t.client.following, true); // still followed: the run may yet end normally
  });

  test("errors about runs we no longer follow are ignored; others are reported", () => {
    const t = setup();
    acknowledged(t);
    t.network.last.push({ type: "error", code: "not_found", message: "x", run_id: "old-run" });
    assert.equal(t.client.following, true);
    assert.equal(t.calls.filter(([n]) => n === "onError" || n === "onUnavailable").length, 0);
    t.network.last.push({ type: "error", code: "bad_frame", message: "Bad frame." });
    assert.deepEqual(t.named("onError").map(([, e]) => e.code), ["bad_frame"]);
  });
});
