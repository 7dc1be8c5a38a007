// Citations (chat/static/chat/sources.js): which references become links, and to where.
import { test } from "node:test";
import assert from "node:assert/strict";

const { citationParts, sameOriginHref, sourceEntries } = await import("../../chat/static/chat/sources.js");

const BASE = "https://site.example/reports/";
const SOURCES = [
  { n: 1, id: "7", title: "CRISPR delivery", url: "/articles/7/", snippet: "Lipid nanoparticles", source: "articles", tool_use_id: "t1" },
  { n: 2, id: "8", title: "Elsewhere", url: "https://other.example/articles/8/", snippet: "", source: "articles", tool_use_id: "t1" },
  { n: 3, id: "9", title: "Script", url: "javascript:alert(1)", snippet: "", source: "articles", tool_use_id: "t1" },
];

test("only pages of this site are linked", () => {
  assert.equal(sameOriginHref("/articles/7/", BASE), "/articles/7/");
  assert.equal(sameOriginHref("https://site.example/articles/7/?a=1#x", BASE), "/articles/7/?a=1#x");
  assert.equal(sameOriginHref("https://other.example/articles/7/", BASE), null);
  assert.equal(sameOriginHref("//other.example/x", BASE), null);
  assert.equal(sameOriginHref("javascript:alert(1)", BASE), null);
  assert.equal(sameOriginHref("data:text/html,<b>", BASE), null);
  assert.equal(sameOriginHref("", BASE), null);
  assert.equal(sameOriginHref(null, BASE), null);
});

test("references to sources with a page here become links; the rest stays text as written", () => {
  const entries = sourceEntries(SOURCES, BASE);
  assert.deepEqual(citationParts("Delivery works [1]; see [2], [3] and [4].", entries), [
    "Delivery works ",
    { n: 1, href: "/articles/7/", title: "CRISPR delivery" },
    "; see [2], [3] and [4].",
  ]);
  assert.deepEqual(citationParts("[1][1]", entries), [
    { n: 1, href: "/articles/7/", title: "CRISPR delivery" },
    { n: 1, href: "/articles/7/", title: "CRISPR delivery" },
  ]);
  assert.deepEqual(citationParts("no references", entries), ["no references"]);
});

test("entries keep the first of a number, drop malformed ones, and name an untitled one", () => {
  const entries = sourceEntries([...SOURCES, { n: 1, title: "again", url: "/x/" }, { n: "4" }, null, { n: 5, url: "/y/" }], BASE);
  assert.deepEqual([...entries.keys()], [1, 2, 3, 5]);
  assert.equal(entries.get(1).title, "CRISPR delivery");
  assert.equal(entries.get(2).href, null);
  assert.equal(entries.get(5).title, "Source 5");
  assert.equal(sourceEntries(undefined, BASE).size, 0);
});
