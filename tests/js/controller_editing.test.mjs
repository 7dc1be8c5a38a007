// Editing the last question (chat/static/chat/controller/editing.js): into the composer, out again, sent as a replacement.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { testTray } from "./tray_fakes.mjs";

/** A tray showing conversation 7: a question and its answer. */
function withExchange({ interactionType = "text_input" } = {}) {
  const t = testTray();
  t.tray.store.conversationId = 7;
  t.tray.loaded = true; // shown already: opening the tray does not load it again
  t.tray.store.addMessage({ role: "user", content: "Old question", attachments: [], interaction_type: interactionType });
  t.tray.store.addMessage({ role: "assistant", content: "Old answer", earlier_versions: [] });
  return t;
}

describe("editing the last question", () => {
  test("it goes into the composer; Cancel puts back exactly what the composer held, and the draft never held the edit", () => {
    const t = withExchange();
    t.view.input.value = "my draft";
    assert.equal(t.tray.editLastQuestion(), true);
    assert.deepEqual(t.view.editing.at(-1), [true, "Old question"]);
    t.view.input.value = "Old question, edited";
    t.tray.saveDraft();
    assert.equal(t.tray.store.draft.text, "my draft");
    t.tray.cancelEdit();
    assert.equal(t.tray.editing, false);
    assert.equal(t.view.input.value, "my draft");
  });

  test("a chip or a button click is not words to rewrite; nor is anything while a reply comes", () => {
    assert.equal(withExchange({ interactionType: "value_selected" }).tray.editLastQuestion(), false);
    const t = withExchange();
    t.tray.send("next");
    assert.equal(t.tray.editLastQuestion(), false);
  });

  test("sending the edit replaces the question and its answer: replace_last question, the old pair gone", () => {
    const t = withExchange();
    t.tray.editLastQuestion();
    assert.equal(t.tray.send("New question"), true);
    t.accept();
    const [frame] = t.sent();
    assert.equal(frame.replace_last, "question");
    assert.equal(frame.message, "New question");
    assert.equal(frame.conversation_id, 7);
    assert.deepEqual(t.tray.store.messages.map((m) => m.content), ["New question"]);
    assert.equal(t.tray.editing, false);
  });

  test("an edit of a conversation that is gone is sent as a new question", () => {
    const t = withExchange();
    t.tray.editLastQuestion();
    t.tray.store.conversationId = null;
    t.tray.send("Again");
    t.accept();
    assert.equal("replace_last" in t.sent()[0], false);
  });
});
