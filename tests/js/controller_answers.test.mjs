// Answers (chat/static/chat/controller/answers.js): regenerate, continue, feedback, and the answer added at the end.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { settle, testTray } from "./tray_fakes.mjs";

function withExchange() {
  const t = testTray();
  t.tray.store.conversationId = 7;
  t.tray.loaded = true; // shown already: opening the tray does not load it again
  t.tray.store.addMessage({ role: "user", content: "Q", attachments: [], interaction_type: "text_input" });
  t.tray.store.addMessage({ id: 11, role: "assistant", content: "First answer", message_html: "", tool_history: [], stop_reason: "",
    earlier_versions: [{ id: 10, content: "Older answer" }], feedback: "" });
  return t;
}

describe("regenerate", () => {
  test("answers the question again without repeating it; the new answer keeps the replaced one as an earlier version", () => {
    const t = withExchange();
    assert.equal(t.tray.regenerate(), true);
    t.accept();
    const [frame] = t.sent();
    assert.equal(frame.message, "");
    assert.equal(frame.replace_last, "answer");
    assert.deepEqual(t.tray.store.messages.map((m) => m.role), ["user"]);
    t.push("complete", { payload: { message: "Second answer", message_id: 12 } });
    const answer = t.tray.store.messages.at(-1);
    assert.equal(answer.content, "Second answer");
    assert.deepEqual(answer.earlier_versions.map((v) => v.content), ["Older answer", "First answer"]);
  });

  test("a refused regenerate replaced nothing: the answer comes back with its versions", () => {
    const t = withExchange();
    t.tray.regenerate();
    t.accept();
    t.network.last.push({ type: "error", code: "rate_limited", message: "Slow down." }); // a refusal: no run, no seq
    assert.equal(t.tray.store.messages.at(-1).content, "First answer");
    assert.deepEqual(t.tray.store.messages.at(-1).earlier_versions.map((v) => v.content), ["Older answer"]);
    assert.equal(t.view.errors.at(-1)[0], "Slow down.");
    assert.equal(t.tray.protocol.following, false);
  });

  test("nothing to regenerate while a reply comes or without a conversation", () => {
    const t = testTray();
    assert.equal(t.tray.regenerate(), false);
    const busy = withExchange();
    busy.tray.send("more");
    assert.equal(busy.tray.regenerate(), false);
  });
});

test("continue asks for the rest as a suggested reply is sent", () => {
  const t = testTray();
  t.tray.continueAnswer();
  t.accept();
  assert.deepEqual([t.sent()[0].message, t.sent()[0].interaction_type], ["Continue", "value_selected"]);
});

describe("feedback", () => {
  const bar = () => ({ querySelectorAll: () => [] });

  test("a verdict is stored on the message; the same verdict again clears it", async () => {
    const t = withExchange();
    const message = t.tray.store.messages[1];
    await t.tray.feedback(message, "good", bar());
    assert.equal(message.feedback, "good");
    await t.tray.feedback(message, "good", bar());
    assert.equal(message.feedback, "");
    assert.deepEqual(t.api.calls, [["markMessage", 11, { feedback: "good" }], ["markMessage", 11, { feedback: "" }]]);
  });

  test("a refused save leaves the verdict as it was and says so; an unsaved answer takes none", async () => {
    const t = testTray({ api: { markMessage: () => { throw new Error("no"); } } });
    const message = { id: 3, feedback: "" };
    await t.tray.feedback(message, "bad", bar());
    assert.equal(message.feedback, "");
    assert.deepEqual(t.view.notices, [["Could not save your feedback.", "error"]]);
    await t.tray.feedback({ id: null, feedback: "" }, "bad", bar());
    await settle();
    assert.equal(t.api.calls.length, 1);
  });
});
