// The tray's translation helpers (chat/static/chat/i18n.js) under Node: English without a catalog, Django's
// catalog when there is one, named placeholders, nodes in translated sentences, dates and numbers per language.
import { test } from "node:test";
import assert from "node:assert/strict";

import * as i18n from "../../chat/static/chat/i18n.js";

test("without Django's catalog every string stays English", () => {
  delete globalThis.django;
  assert.equal(i18n.gettext("Send"), "Send");
  assert.equal(i18n.ngettext("%(n)s topic", "%(n)s topics", 1), "%(n)s topic");
  assert.equal(i18n.ngettext("%(n)s topic", "%(n)s topics", 2), "%(n)s topics");
});

test("with the catalog, gettext and ngettext are Django's", () => {
  globalThis.django = {
    gettext: (s) => ({ Send: "Senden" })[s] ?? s,
    ngettext: (s, p, n) => (n === 1 ? `${s}/de` : `${p}/de`),
  };
  try {
    assert.equal(i18n.gettext("Send"), "Senden");
    assert.equal(i18n.gettext("Unknown"), "Unknown");
    assert.equal(i18n.ngettext("a", "b", 3), "b/de");
  } finally {
    delete globalThis.django;
  }
});

test("interpolate fills named placeholders and leaves unknown ones", () => {
  assert.equal(i18n.interpolate("Hi %(user)s, %(user)s! %(other)s", { user: "Ana" }), "Hi Ana, Ana! %(other)s");
  const strong = { tag: "strong" };
  assert.deepEqual(i18n.interpolateNodes("%(tool)s erlauben?", { tool: strong }), [strong, " erlauben?"]);
  assert.deepEqual(i18n.interpolateNodes("Allow %(tool)s?", { tool: strong }), ["Allow ", strong, "?"]);
});

test("errors: the server's English message on an English page, the code's translation elsewhere", () => {
  i18n.setLanguage("en");
  assert.equal(i18n.errorText({ code: "busy", message: "A run is already in progress in this conversation." }), "A run is already in progress in this conversation.");
  i18n.setLanguage("de");
  globalThis.django = { gettext: (s) => (s === "A reply is already being written in this conversation." ? "Es wird schon geantwortet." : s) };
  try {
    assert.equal(i18n.errorText({ code: "busy", message: "A run is already in progress in this conversation." }), "Es wird schon geantwortet.");
    assert.equal(i18n.errorText({ code: "no_such_code", message: "as sent" }), "as sent");
    assert.equal(i18n.errorText(null), "");
  } finally {
    delete globalThis.django;
    i18n.setLanguage("en");
  }
});

test("dates and numbers in the page's language", () => {
  const when = new Date(Date.UTC(2026, 10, 23, 17, 40));
  i18n.setLanguage("de");
  assert.equal(i18n.formatNumber(1234567.5), "1.234.567,5");
  assert.match(i18n.formatDate(when), /^23\.11\.2026/);
  i18n.setLanguage("fr");
  assert.match(i18n.formatDate(when), /^23 nov\. 2026/);
  i18n.setLanguage("not a tag!");
  assert.equal(i18n.formatNumber(1234), "1,234"); // an invalid tag falls back to English
  i18n.setLanguage("en");
});
