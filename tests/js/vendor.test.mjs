// The tray's vendored libraries are the npm packages pinned in package-lock.json, unmodified (`make vendor` copies
// them; marked and DOMPurify without their source-map comment), each with its licence.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const read = (path) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
// as `sed '/sourceMappingURL=/d'`: the line goes with its newline
const withoutSourceMap = (text) => text.replace(/^.*sourceMappingURL=.*(?:\n|$)/gm, "");
const VENDOR = "chat/static/chat/vendor";
const COPIES = [
  [`${VENDOR}/marked.esm.js`, "node_modules/marked/lib/marked.esm.js", withoutSourceMap],
  [`${VENDOR}/purify.es.js`, "node_modules/dompurify/dist/purify.es.mjs", withoutSourceMap],
  [`${VENDOR}/highlight.min.js`, "node_modules/@highlightjs/cdn-assets/es/highlight.min.js"],
  [`${VENDOR}/katex.min.js`, "node_modules/katex/dist/katex.min.js"],
  [`${VENDOR}/marked.LICENSE.md`, "node_modules/marked/LICENSE"],
  [`${VENDOR}/dompurify.LICENSE`, "node_modules/dompurify/LICENSE"],
  [`${VENDOR}/highlight.LICENSE`, "node_modules/@highlightjs/cdn-assets/LICENSE"],
  [`${VENDOR}/katex.LICENSE`, "node_modules/katex/LICENSE"],
];

for (const [copy, source, normalise = (text) => text] of COPIES) {
  test(`${copy} is ${source} as pinned`, () => {
    assert.equal(read(copy), normalise(read(source)), `run make vendor to refresh ${copy}`);
  });
}
