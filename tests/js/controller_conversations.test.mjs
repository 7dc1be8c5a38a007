// Conversations (chat/static/chat/controller/conversations.js): loading from REST, a part at a time, and starting anew.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { PAGE_MESSAGES, shownMessages } from "../../chat/static/chat/controller/conversations.js";
import { testTray } from "./tray_fakes.mjs";

const user = (id, content, extra = {}) => ({ id, role: "user", content, interaction_type: "text_input", ...extra });
const answer = (id, content, extra = {}) => ({ id, role: "assistant", content, status: "complete", ...extra });

describe("loading a conversation", () => {
  test("its latest part is shown and stored; a standard client's tool results are not the user's words", async () => {
    const data = { id: 7, has_earlier: true, messages: [user(1, "Q"), user(2, "{}", { interaction_type: "tool_result" }),
      answer(3, "A", { custom_payload: { payload_id: "p1", type: "x" }, payload_outcome: "accepted" })] };
    const t = testTray({ api: { getConversation: () => data } });
    assert.equal(await t.tray.loadConversation(7), true);
    assert.deepEqual(t.api.calls, [["getConversation", 7, { limit: PAGE_MESSAGES }]]);
    assert.deepEqual(t.tray.store.messages.map((m) => m.content), ["Q", "A"]);
    assert.deepEqual(t.view.shown.map((el) => [el.kind, el.latest ?? null]), [["user", null], ["assistant", true]]);
    assert.equal(t.tray.store.payloadOutcome("p1"), "accepted"); // decided before the reload: still decided
    assert.equal(t.tray.earliestId, 1);
    assert.deepEqual(t.view.calls.find((c) => c[0] === "showEarlier"), ["showEarlier", true]);
  });

  test("a trailing answer still streaming is followed, not drawn: chat.resume from its first event", async () => {
    const data = { id: 7, messages: [user(1, "Q"), answer(2, "", { status: "streaming", run_id: "run-9" })] };
    const t = testTray({ api: { getConversation: () => data } });
    await t.tray.loadConversation(7);
    t.accept();
    assert.deepEqual(t.sent("chat.resume"), [{ type: "chat.resume", run_id: "run-9", after_seq: 0 }]);
    assert.deepEqual(t.tray.store.messages.map((m) => m.role), ["user"]);
    assert.equal(t.tray.live.kind, "live");
  });

  test("a conversation that is gone is forgotten; the reader is told unless the load was quiet", async () => {
    const t = testTray({ api: { getConversation: () => { throw Object.assign(new Error("gone"), { status: 404 }); } } });
    t.tray.store.conversationId = 7;
    assert.equal(await t.tray.loadConversation(7, { quiet: true }), false);
    assert.equal(t.tray.store.conversationId, null);
    assert.deepEqual(t.view.notices, []);
    await t.tray.loadConversation(7);
    assert.deepEqual(t.view.notices, [["Could not load that conversation.", "error"]]);
  });

  test("a quiet load (the restore after a page load) leaves the list the person opened meanwhile; a load they asked for shows it", async () => {
    const t = testTray({ api: { getConversation: () => ({ id: 7, messages: [user(1, "Q")] }) } });
    t.tray.history.isOpen = true;
    await t.tray.loadConversation(7, { quiet: true });
    assert.equal(t.view.calls.filter((c) => c[0] === "showLog").length, 0);
    await t.tray.loadConversation(7);
    assert.equal(t.view.calls.filter((c) => c[0] === "showLog").length, 1);
  });

  test("opening the tray loads the tab's conversation once, following the run the tab was following", async () => {
    const t = testTray({ api: { getConversation: () => ({ id: 7, messages: [user(1, "Q")] }) } });
    t.tray.store.conversationId = 7;
    t.tray.store.pendingRunId = "run-3";
    t.tray.open();
    t.tray.open();
    await t.tray.loading;
    assert.equal(t.api.calls.length, 1);
    t.accept();
    assert.deepEqual(t.sent("chat.resume").map((f) => f.run_id), ["run-3"]); // a trailing question: its answer is coming
  });
});

describe("earlier messages", () => {
  test("the part before the first message shown goes above it; more is offered while there is more", async () => {
    const pages = [{ id: 7, has_earlier: true, messages: [user(3, "Q2"), answer(4, "A2")] },
      { id: 7, has_earlier: false, messages: [user(1, "Q1"), answer(2, "A1")] }];
    const t = testTray({ api: { getConversation: () => pages.shift() } });
    await t.tray.loadConversation(7);
    await t.tray.loadEarlier();
    assert.deepEqual(t.api.calls[1], ["getConversation", 7, { limit: PAGE_MESSAGES, before: 3 }]);
    assert.deepEqual(t.tray.store.messages.map((m) => m.content), ["Q1", "A1", "Q2", "A2"]);
    assert.deepEqual(t.view.shown.map((el) => el.text ?? el.message.content), ["Q1", "A1", "Q2", "A2"]);
    assert.deepEqual(t.view.calls.filter((c) => c[0] === "showEarlier").at(-1), ["showEarlier", false]);
  });

  test("a part that arrives after another conversation was opened is dropped", async () => {
    let answerEarlier;
    const t = testTray({ api: { getConversation: (id, { before }) => (before ? new Promise((r) => { answerEarlier = r; })
      : { id, has_earlier: true, messages: [user(3, `Q of ${id}`)] }) } });
    await t.tray.loadConversation(7);
    const earlier = t.tray.loadEarlier();
    await t.tray.loadConversation(8);
    answerEarlier({ id: 7, messages: [user(1, "old of 7")] });
    await earlier;
    assert.deepEqual(t.tray.store.messages.map((m) => m.content), ["Q of 8"]);
  });
});

test("a new conversation: the run is cancelled, the card closed, the messages and the conversation forgotten", () => {
  const t = testTray();
  t.tray.store.conversationId = 7;
  t.tray.loaded = true;
  t.tray.send("Q");
  t.push("text_delta", { text: "A" });
  t.tray.newConversation();
  assert.deepEqual(t.sent("chat.cancel"), [{ type: "chat.cancel", run_id: "run-1" }]);
  assert.equal(t.tray.panel.closed, 1);
  assert.deepEqual([t.tray.store.messages, t.tray.store.conversationId, t.tray.store.lastRequest, t.tray.live], [[], null, null, null]);
});

test("shownMessages keeps the user's words and the answers", () => {
  assert.deepEqual(shownMessages([user(1, "a"), user(2, "b", { interaction_type: "tool_result" }), answer(3, "c"), { role: "system" }])
    .map((m) => m.id), [1, 3]);
  assert.deepEqual(shownMessages(undefined), []);
});
