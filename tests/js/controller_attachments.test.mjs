// Attachments (chat/static/chat/controller/attachments.js): refused before upload, uploaded, carried by the send.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { formatSize } from "../../chat/static/chat/controller/attachments.js";
import { settle, testTray } from "./tray_fakes.mjs";

const LIMITS = { max_count: 2, max_bytes: 5 * 1024 * 1024, types: ["image/png", "application/pdf"] };
const png = (name = "a.png", size = 1000) => ({ name, size, type: "image/png" });

describe("attach", () => {
  test("what the server would refuse is refused here first, with the reason, and not uploaded", () => {
    const t = testTray({ config: { attachments: LIMITS } });
    t.tray.attach([{ name: "x.exe", size: 10, type: "application/x-msdownload" }, png("big.png", 6 * 1024 * 1024)]);
    assert.match(t.view.notices[0][0], /^x\.exe: only images/);
    assert.equal(t.view.notices[1][0], "big.png is too big: the limit is 5 MB.");
    assert.deepEqual(t.api.calls, []);
    t.tray.attach([png("1.png"), png("2.png"), png("3.png")]);
    assert.equal(t.tray.pending.length, 2);
    assert.equal(t.view.notices.at(-1)[0], "A message can carry at most 2 files.");
  });

  test("without limits in the config the tray takes no files", () => {
    const t = testTray();
    t.tray.attach([png()]);
    assert.deepEqual(t.tray.pending, []);
  });

  test("an uploaded file becomes the next message's: its id in chat.send, the composer's list empties", async () => {
    const t = testTray({ config: { attachments: LIMITS }, api: { uploadAttachment: () => ({ id: "f1", name: "a.png", url: "/f1" }) } });
    t.tray.attach([png()]);
    assert.equal(t.tray.send("see this"), false); // still uploading
    assert.match(t.view.notices.at(-1)[0], /finished uploading/);
    await settle();
    assert.equal(t.tray.pending[0].status, "ready");
    assert.deepEqual(t.tray.store.draft.files, [{ id: "f1", name: "a.png", url: "/f1" }]); // survives a navigation
    assert.equal(t.tray.send(""), true); // files alone are a message
    t.accept();
    assert.deepEqual(t.sent()[0].attachments, ["f1"]);
    assert.deepEqual(t.tray.pending, []);
    assert.deepEqual(t.tray.store.messages[0].attachments, [{ id: "f1", name: "a.png", url: "/f1" }]);
    // acknowledged: the message holds its files, a retry must not claim them again
    t.push("status", { message: "Thinking…" });
    assert.equal(t.tray.store.lastRequest.attachments, null);
  });

  test("a failed upload is dropped with its reason; a file removed while it uploads is discarded once it arrives", async () => {
    const t = testTray({ config: { attachments: LIMITS }, api: { uploadAttachment: (file) => {
      if (file.name === "bad.png") throw new Error("refused");
      return { id: "f2", name: file.name };
    } } });
    t.tray.attach([png("bad.png"), png("ok.png")]);
    t.tray.removeAttachment(t.tray.pending.find((p) => p.name === "ok.png"));
    await settle();
    assert.deepEqual(t.tray.pending, []);
    assert.deepEqual(t.view.notices, [["bad.png: refused", "error"]]);
    assert.deepEqual(t.api.calls.filter((c) => c[0] === "discardAttachment"), [["discardAttachment", "f2"]]);
  });
});

test("formatSize: megabytes and kilobytes for people", () => {
  assert.equal(formatSize(5 * 1024 * 1024), "5 MB");
  assert.equal(formatSize(300 * 1024), "300 KB");
  assert.equal(formatSize(10), "1 KB");
});
