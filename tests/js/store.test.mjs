// The conversation store (chat/static/chat/store.js) and its storage adapters, under Node.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { ConversationStore, DRAFT_MAX_CHARS, STORAGE_KEY, memoryAdapter, webStorageAdapter } from "../../chat/static/chat/store.js";
import { ProtocolClient, chatSendFrame } from "../../chat/static/chat/protocol.js";
import { event, fakeNetwork } from "./fakes.mjs";

/** A Web Storage stand-in (getItem/setItem on strings). */
function fakeStorage(initial = {}) {
  const items = new Map(Object.entries(initial));
  return {
    items,
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => items.set(key, String(value)),
  };
}

describe("storage adapters", () => {
  test("web storage: one JSON entry under the tray's key", () => {
    const storage = fakeStorage();
    const adapter = webStorageAdapter(STORAGE_KEY, () => storage);
    assert.deepEqual(adapter.load(), {});
    adapter.save({ conversationId: 4, open: true, runId: "r" });
    assert.deepEqual(JSON.parse(storage.items.get("chat-tray:v1")), { conversationId: 4, open: true, runId: "r" });
    assert.deepEqual(adapter.load(), { conversationId: 4, open: true, runId: "r" });
  });

  test("web storage that is disabled, full or corrupt loses nothing but the memory", () => {
    const throwing = () => {
      throw new Error("SecurityError: storage is disabled");
    };
    const disabled = webStorageAdapter(STORAGE_KEY, throwing);
    assert.deepEqual(disabled.load(), {});
    assert.doesNotThrow(() => disabled.save({ conversationId: 1 }));
    const full = webStorageAdapter(STORAGE_KEY, () => ({ getItem: () => null, setItem: throwing }));
    assert.doesNotThrow(() => full.save({ conversationId: 1 }));
    for (const raw of ["{not json", "null", "42", '"text"']) {
      assert.deepEqual(webStorageAdapter(STORAGE_KEY, () => fakeStorage({ [STORAGE_KEY]: raw })).load(), {}, raw);
    }
  });

  test("memory adapter keeps a copy, not a reference", () => {
    const adapter = memoryAdapter();
    const state = { conversationId: 1 };
    adapter.save(state);
    state.conversationId = 2;
    assert.deepEqual(adapter.load(), { conversationId: 1 });
  });
});

describe("ConversationStore", () => {
  test("restore takes only well-typed values", () => {
    const store = new ConversationStore({ storage: memoryAdapter({ conversationId: 12, open: true, runId: "run-3" }) });
    const empty = { user: "", text: "", files: [] };
    assert.deepEqual(store.restore(), { conversationId: 12, runId: "run-3", open: true, draft: empty });
    const bad = new ConversationStore({ storage: memoryAdapter({ conversationId: "12", open: "yes", runId: 5, draft: "hi" }) });
    assert.deepEqual(bad.restore(), { conversationId: null, runId: null, open: false, draft: empty });
    const files = [{ id: "a1", name: "x.png" }, { id: 7, name: "bad id" }, null, { id: "a2" }];
    const odd = new ConversationStore({ storage: memoryAdapter({ draft: { user: "ann", text: 5, files } }) });
    assert.deepEqual(odd.restore().draft, { user: "ann", text: "", files: [{ id: "a1", name: "x.png" }] });
  });

  test("the unsent draft is stored with its writer, and only while there is one", () => {
    const storage = memoryAdapter();
    const store = new ConversationStore({ storage });
    store.setConversation(3);
    store.setDraft("ann", "half a quest", [{ id: "f1", name: "plan.pdf" }]);
    assert.deepEqual(storage.load().draft, { user: "ann", text: "half a quest", files: [{ id: "f1", name: "plan.pdf" }] });
    const next = new ConversationStore({ storage });
    assert.deepEqual(next.restore().draft, { user: "ann", text: "half a quest", files: [{ id: "f1", name: "plan.pdf" }] });
    store.setDraft("ann", "", []);
    assert.deepEqual(storage.load(), { conversationId: 3, open: false, runId: null });
    store.setDraft("ann", "x".repeat(DRAFT_MAX_CHARS + 1));
    assert.equal(storage.load().draft, undefined); // too long to store: it stays on screen only
  });

  test("conversation, open and run are persisted on every change; seq and messages are not", () => {
    const storage = memoryAdapter();
    const store = new ConversationStore({ storage });
    assert.equal(store.setConversation(5), true);
    assert.equal(store.setConversation(5), false);
    assert.equal(store.setConversation(null), false); // events without a conversation change nothing
    assert.equal(store.setConversation(undefined), false);
    store.setOpen(true);
    store.setRun("run-1");
    store.seenSeq.set("run-1", 9);
    store.addMessage({ role: "user", content: "hi" });
    assert.deepEqual(storage.load(), { conversationId: 5, open: true, runId: "run-1" });
    store.forgetConversation();
    store.setRun(null);
    assert.deepEqual(storage.load(), { conversationId: null, open: true, runId: null });
  });

  test("a restored run is handed out once", () => {
    const store = new ConversationStore({ storage: memoryAdapter({ conversationId: 1, runId: "run-7" }) });
    store.restore();
    assert.equal(store.takePendingRun(), "run-7");
    assert.equal(store.takePendingRun(), null);
  });

  test("messages: the last role tells whether a reply is owed", () => {
    const store = new ConversationStore();
    assert.equal(store.lastRole, null);
    store.addMessage({ role: "user", content: "q" });
    assert.equal(store.lastRole, "user");
    store.addMessage({ role: "assistant", content: "a" });
    assert.equal(store.lastRole, "assistant");
    assert.equal(store.messages.length, 2);
    store.clearMessages();
    assert.equal(store.lastRole, null);
  });

  test("payload outcomes are keyed by the payload id as a string", () => {
    const store = new ConversationStore();
    assert.equal(store.setPayloadOutcome(7, "accepted"), true);
    assert.equal(store.payloadOutcome("7"), "accepted");
    assert.equal(store.payloadOutcomes.get("7"), "accepted");
    assert.equal(store.setPayloadOutcome(undefined, "rejected"), false);
    assert.equal(store.payloadOutcome(null), undefined);
  });

  test("the protocol client keeps its seqs in the store: a new client resumes where the old one was", () => {
    const store = new ConversationStore();
    const location = { protocol: "http:", host: "h" };
    const network = fakeNetwork();
    const first = new ProtocolClient("/ws/", {}, { seen: store.seenSeq, WebSocket: network.WebSocket, location });
    first.start(chatSendFrame({ message: "hi" }));
    network.last.accept();
    for (const seq of [1, 2, 3]) network.last.push(event("run-1", seq, "text_delta", { text: "x" }));
    first.close();
    const second = new ProtocolClient("/ws/", {}, { seen: store.seenSeq, WebSocket: network.WebSocket, location });
    second.follow("run-1");
    network.last.accept();
    assert.deepEqual(network.last.sent, [{ type: "chat.resume", run_id: "run-1", after_seq: 3 }]);
  });
});
