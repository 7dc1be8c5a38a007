// The public registry API (chat/static/chat/pagechat.js over registry.js): lookups and refusals, under Node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import * as pagechat from "../../chat/static/chat/pagechat.js";
import { findClientAction, findPayloadHandler, registerBuiltinClientAction, registerBuiltinPayloadHandler, setTray } from "../../chat/static/chat/registry.js";

const render = () => null;

test("the public API: module exports and the global's functions are the same", () => {
  const names = ["getContext", "getTray", "onTrayReady", "registerClientAction", "registerPageHandlers", "registerPayloadHandler", "registerPayloadRenderer", "setContext"];
  for (const name of names) {
    assert.equal(typeof pagechat[name], "function", name);
    assert.equal(pagechat.api[name], pagechat[name], name);
  }
  assert.ok(Object.isFrozen(pagechat.api));
  assert.ok(pagechat.ICONS.chart && pagechat.ICONS.search);
});

test("a renderer is found with its options; page handlers win, built-ins come last", () => {
  registerBuiltinPayloadHandler("layered", { title: "builtin", render });
  assert.equal(findPayloadHandler("layered").title, "builtin");
  const onAccept = () => true;
  pagechat.registerPayloadRenderer("layered", render, { title: "site", icon: "chart", width: "300px", onAccept });
  assert.deepEqual(findPayloadHandler("layered"), { title: "site", icon: "chart", width: "300px", onAccept, render });
  pagechat.registerPayloadHandler("layered", { title: "page", render });
  assert.equal(findPayloadHandler("layered").title, "page");
  assert.equal(findPayloadHandler("never_registered"), null);
});

test("registration mistakes are TypeErrors at once, not a broken panel later", () => {
  const bad = [
    ["", render, {}],
    [42, render, {}],
    ["t", "not a function", {}],
    ["t", render, null],
    ["t", render, { onAcept: () => {} }], // a typo must not silently drop the Accept button
    ["t", render, { onAccept: "yes" }],
    ["t", render, { title: 3 }],
    ["t", render, { icon: "<svg onload=alert(1)>" }],
    ["t", render, { icon: "no-such-icon" }],
  ];
  for (const args of bad) assert.throws(() => pagechat.registerPayloadRenderer(...args), TypeError, JSON.stringify(args.map(String)));
  assert.equal(findPayloadHandler("t"), null);
  assert.throws(() => pagechat.registerPayloadHandler("t", null), TypeError);
  assert.throws(() => pagechat.registerClientAction("x", {}), TypeError);
});

test("icons: a built-in name or SVG path data", () => {
  pagechat.registerPayloadRenderer("with_path", render, { icon: "M4 4h16v16H4z" });
  assert.equal(findPayloadHandler("with_path").icon, "M4 4h16v16H4z");
});

test("client actions: page actions win over the built-ins", () => {
  const builtin = () => "builtin";
  const page = () => "page";
  registerBuiltinClientAction("act", builtin);
  assert.equal(findClientAction("act"), builtin);
  pagechat.registerPageHandlers({ clientActions: { act: page } });
  assert.equal(findClientAction("act"), page);
  assert.equal(findClientAction("unknown"), null);
});

test("page context: merged, a null removes a key, callers get copies", () => {
  pagechat.setContext({ tab: "a", filter: "x" });
  pagechat.setContext({ tab: "b", filter: null });
  const context = pagechat.getContext();
  assert.deepEqual(context, { tab: "b" });
  context.tab = "mutated";
  assert.deepEqual(pagechat.getContext(), { tab: "b" });
});

test("onTrayReady runs waiting callbacks once the tray exists, later ones at once", () => {
  const seen = [];
  pagechat.onTrayReady((t) => seen.push(["early", t]));
  assert.equal(pagechat.getTray(), null);
  const tray = { name: "tray" };
  setTray(tray);
  pagechat.onTrayReady((t) => seen.push(["late", t]));
  assert.deepEqual(seen, [["early", tray], ["late", tray]]);
  assert.equal(pagechat.getTray(), tray);
});

test("the protocol client, its socket and the store touch no DOM", async () => {
  for (const name of ["protocol.js", "socket.js", "store.js"]) {
    const source = await readFile(new URL(`../../chat/static/chat/${name}`, import.meta.url), "utf8");
    const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ""); // comments may mention the DOM
    assert.doesNotMatch(code, /\b(document|window|HTMLElement|localStorage)\b/, name);
    assert.doesNotMatch(code, /from "\.\/(dom|view|messages|live|panel|history|controller)\.js"/, name);
  }
});
