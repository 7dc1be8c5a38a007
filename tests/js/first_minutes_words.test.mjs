// The conversation list names a conversation's page by its title (chat/static/chat/history.js), never by its id.
import { test } from "node:test";
import assert from "node:assert/strict";

const { pageTitle } = await import("../../chat/static/chat/history.js");

test("a page is named by the title the tray config gives it", () => {
  const config = { page_titles: { streams_list: "Forschungsströme", edit_research_stream: "Stream settings" } };
  assert.equal(pageTitle(config, "streams_list"), "Forschungsströme");
  assert.equal(pageTitle(config, "edit_research_stream"), "Stream settings");
});

test("a page the config does not know (gone since, or an older server) reads as words, not as an id", () => {
  assert.equal(pageTitle({ page_titles: {} }, "old_page_name"), "Old page name");
  assert.equal(pageTitle({}, "reports"), "Reports");
  assert.equal(pageTitle({ page_titles: {} }, "toString"), "ToString"); // only the config's own keys, never Object.prototype's
  assert.equal(pageTitle(null, "a_b"), "A b");
});
