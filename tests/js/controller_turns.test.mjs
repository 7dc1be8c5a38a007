// The turn in flight (chat/static/chat/controller/turns.js): events into the live view, approvals, stop, the end, retry.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { settle, testTray } from "./tray_fakes.mjs";

function asking(config = {}) {
  const t = testTray({ config });
  t.tray.send("Question");
  return t;
}

describe("a run's events", () => {
  test("text streams into the live view; complete ends the turn with the answer stored and announced", () => {
    const t = asking();
    t.push("status", { message: "Thinking…" });
    t.push("text_delta", { text: "Hel" });
    t.push("text_delta", { text: "lo" });
    const live = t.tray.live;
    assert.deepEqual([live.statuses, live.text], [["Thinking…"], "Hello"]);
    assert.equal(t.tray.store.runId, "run-1");
    t.push("complete", { payload: { message: "Hello", message_id: 5 } });
    assert.equal(t.tray.live, null);
    assert.equal(live.el.removed, true);
    assert.equal(t.view.busy, false);
    assert.equal(t.tray.protocol.following, false);
    assert.equal(t.tray.store.conversationId, 7);
    assert.deepEqual(t.tray.store.messages.at(-1).content, "Hello");
    assert.deepEqual(t.view.dispatched.map(([name]) => name), ["reply"]);
    assert.equal(t.view.shown.at(-1).latest, true);
  });

  test("a tool's changes reach the page at once; a server action's outcome refreshes what it changed", () => {
    const t = asking();
    t.push("tool_complete", { tool: "create_stream", changes: [{ entity: "stream", id: 3, op: "created" }, { nope: 1 }] });
    assert.deepEqual(t.view.dispatched, [["changed", { entity: "stream", id: 3, op: "created", tool: "create_stream" }]]);
    t.push("complete", { payload: { message: "Done", action_result: { action: "create_stream", status: "succeeded", refresh: true,
      changes: [{ entity: "stream", id: 3 }] } } });
    assert.deepEqual(t.view.dispatched.slice(1).map(([name]) => name), ["reply", "action-result", "changed", "refresh"]);
  });

  test("a tool approval is shown in the live view, and its answer goes out as chat.approve for the run", () => {
    const t = asking({ tool_fields: { delete_stream: { id: "Stream" } } });
    t.push("tool_approval", { tool: "delete_stream", tool_use_id: "tu1", input: { id: 3 } });
    assert.equal(t.tray.live.approvals[0].tool_use_id, "tu1");
    t.tray.live.hooks.approve("tu1", true);
    assert.deepEqual(t.sent("chat.approve"), [{ type: "chat.approve", run_id: "run-1", tool_use_id: "tu1", approved: true }]);
    // an approval from a server that sends no fields is labelled from the page's config
    assert.deepEqual(t.tray.live.hooks.labels("delete_stream"), { id: "Stream" });
    assert.equal(t.tray.live.hooks.labels("other"), null);
  });

  test("Stop asks the server to cancel the run; the cancelled answer stays, as far as it got", () => {
    const t = asking();
    t.push("text_delta", { text: "Partial" });
    t.tray.cancel();
    assert.deepEqual(t.sent("chat.cancel"), [{ type: "chat.cancel", run_id: "run-1" }]);
    assert.equal(t.tray.live.statuses.at(-1), "Stopping…");
    t.push("cancelled");
    assert.deepEqual([t.tray.store.messages.at(-1).content, t.tray.store.messages.at(-1).status], ["Partial", "cancelled"]);
  });
});

describe("failures and retry", () => {
  test("an error after the run started: Retry regenerates the answer, it never sends the question twice", () => {
    const t = asking();
    t.push("error", { message: "The model failed." });
    const [message, retry] = t.view.errors.at(-1);
    assert.equal(message, "The model failed.");
    assert.equal(t.tray.store.lastRequest.replaceLast, "answer");
    t.tray.store.conversationId = 7;
    retry();
    const frames = t.sent();
    assert.equal(frames.length, 2);
    assert.deepEqual([frames[1].message, frames[1].replace_last], ["", "answer"]);
  });

  test("a send refused as not_found forgets the conversation: Retry starts a new one", () => {
    const t = testTray();
    t.tray.store.conversationId = 99;
    t.tray.loaded = true;
    t.tray.send("Hi");
    t.accept();
    t.network.last.push({ type: "error", code: "not_found", message: "No such conversation." });
    assert.equal(t.tray.store.conversationId, null);
    t.view.errors.at(-1)[1]();
    assert.deepEqual(t.sent().map((f) => f.conversation_id), [99, null]);
    assert.notEqual(t.sent()[0].client_message_id, t.sent()[1].client_message_id); // a new attempt, not a resend
  });

  test("the connection lost mid-turn: Retry reads the acknowledged run back from the conversation instead of resending", async () => {
    const t = asking();
    t.push("text_delta", { text: "Half" });
    t.tray.protocolHooks().onConnectionLost(t.tray.protocol.run);
    assert.equal(t.view.errors.at(-1)[0], "Lost the connection to the server.");
    assert.equal(t.tray.store.messages.at(-1).status, "interrupted");
    assert.equal(t.tray.store.lastRequest.lost.runId, "run-1");
    t.tray.store.conversationId = 7;
    t.view.errors.at(-1)[1]();
    await settle();
    assert.deepEqual(t.api.calls[0].slice(0, 2), ["getConversation", 7]);
    assert.equal(t.sent().length, 1);
  });

  test("offline: the view says so and the turn waits for the network", () => {
    const t = asking();
    t.tray.onNetwork(false);
    assert.deepEqual(t.view.calls.at(-1), ["showOffline", true]);
    assert.equal(t.tray.live.statuses.at(-1), "Waiting for the network…");
  });
});
