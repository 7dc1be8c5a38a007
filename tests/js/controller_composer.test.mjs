// The composer (chat/static/chat/controller/composer.js): what a send puts on the wire, what it refuses, the draft.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { testTray } from "./tray_fakes.mjs";

describe("send", () => {
  test("a typed message opens the tray, is shown and stored, and goes out as one chat.send with the page's context", () => {
    const t = testTray({ config: { context: { stream_id: 4 } } });
    t.view.input.value = "";
    assert.equal(t.tray.send("  How many streams?  "), true);
    assert.equal(t.view.isOpen, true);
    t.accept();
    const [frame] = t.sent();
    assert.equal(frame.message, "How many streams?");
    assert.equal(frame.interaction_type, "text_input");
    assert.equal(frame.conversation_id, null);
    assert.deepEqual(frame.context, { stream_id: 4, current_page: "reports" });
    assert.equal("replace_last" in frame, false);
    assert.deepEqual(t.tray.store.messages, [{ role: "user", content: "How many streams?", attachments: [], interaction_type: "text_input" }]);
    assert.equal(t.view.shown[0].text, "How many streams?");
    assert.equal(t.view.shown[1].kind, "live"); // the turn in flight follows the question
    assert.equal(t.view.busy, true);
  });

  test("a chip or a server action keeps its interaction type and metadata", () => {
    const t = testTray();
    t.tray.send("Create", "action_executed", { action_identifier: "create_stream", action_data: { a: 1 }, token: "tok" });
    t.accept();
    const [frame] = t.sent();
    assert.equal(frame.interaction_type, "action_executed");
    assert.deepEqual(frame.action_metadata, { action_identifier: "create_stream", action_data: { a: 1 }, token: "tok" });
  });

  test("nothing to send, a reply still coming, or a message over the limit: refused with a reason, nothing sent", () => {
    const t = testTray({ config: { max_message_chars: 5 } });
    assert.equal(t.tray.send("   "), false);
    assert.equal(t.view.notices.length, 0); // an empty composer is not an error
    assert.equal(t.tray.send("too long"), false);
    assert.match(t.view.notices.at(-1)[0], /3 characters too long \(the limit is 5\)/);
    assert.equal(t.tray.send("hi"), true);
    assert.equal(t.tray.send("again"), false);
    assert.match(t.view.notices.at(-1)[0], /wait for the current reply/);
    t.accept();
    assert.equal(t.sent().length, 1);
    assert.equal(t.tray.store.messages.length, 1);
  });

  test("a send made while the conversation loads waits for it, so the history never wipes the new turn", async () => {
    const t = testTray();
    let loaded;
    t.tray.loading = new Promise((resolve) => { loaded = resolve; });
    assert.equal(t.tray.send("hello"), true);
    assert.equal(t.tray.store.messages.length, 0);
    t.tray.loading = null;
    loaded();
    await Promise.resolve();
    t.accept();
    assert.equal(t.sent()[0].message, "hello");
  });

  test("what the composer holds is the draft; a sent chip leaves the typed text as it is", () => {
    const t = testTray();
    t.view.input.value = "half a thought";
    t.tray.saveDraft();
    assert.deepEqual(t.tray.store.draft, { user: "7", text: "half a thought", files: [] });
    t.tray.send("Weekly", "value_selected");
    assert.equal(t.tray.store.draft.text, "half a thought");
  });
});

describe("restoring the draft", () => {
  test("the writer gets their text and files back", () => {
    const t = testTray();
    t.tray.restoreDraft({ user: "7", text: "unsent", files: [{ id: "f1", name: "a.png" }] });
    assert.equal(t.view.input.value, "unsent");
    assert.deepEqual(t.tray.pending.map((p) => [p.key, p.status, p.data.id]), [["restored-f1", "ready", "f1"]]);
  });

  test("someone else's draft is not shown and is dropped from storage", () => {
    const t = testTray();
    t.tray.store.draft = { user: "8", text: "secret", files: [] };
    t.tray.restoreDraft(t.tray.store.draft);
    assert.equal(t.view.input.value, "");
    assert.deepEqual(t.tray.store.draft, { user: "7", text: "", files: [] });
  });
});
