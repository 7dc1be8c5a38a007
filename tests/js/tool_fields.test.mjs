// A tool's input as a person reads it (chat/static/chat/fields.js): the rows a tool card and an approval from an older
// server show - labelled, in the input's order, values as plain text - never JSON.
import { test } from "node:test";
import assert from "node:assert/strict";

const { fieldLabels, inputFields, plainValue, titleFromName } = await import("../../chat/static/chat/fields.js");

const JSON_PUNCTUATION = /[{}"[\]]/;

test("the config's labels name the keys; a key it does not know reads as words", () => {
  const labels = { stream_id: "Strom", new_name: "Neuer Name" };
  assert.deepEqual(inputFields({ stream_id: 1, new_name: "Oncology Radar", dryRun: false }, labels), [
    { label: "Strom", value: "1" },
    { label: "Neuer Name", value: "Oncology Radar" },
    { label: "Dry run", value: "no" },
  ]);
  assert.deepEqual(inputFields({ query: "CRISPR" }), [{ label: "Query", value: "CRISPR" }]);
  // only the labels' own keys, never Object.prototype's
  assert.deepEqual(inputFields({ toString: "x" }, {}), [{ label: "To string", value: "x" }]);
});

test("values are plain text: lists joined, objects as label: value pairs, nothing that reads as JSON", () => {
  const rows = inputFields({ keywords: ["CRISPR", "Cas9"], filters: { min_year: 2020, open_access: true }, note: null });
  assert.deepEqual(rows.map((r) => r.value), ["CRISPR, Cas9", "Min year: 2020; Open access: yes", "—"]);
  for (const row of rows) assert.doesNotMatch(`${row.label} ${row.value}`, JSON_PUNCTUATION);
  assert.equal(plainValue([[1, 2], { a: [3] }]), "1, 2, A: 3");
});

test("an empty input has no rows; one that is not an object is one row; long values are clipped", () => {
  assert.deepEqual(inputFields({}), []);
  assert.deepEqual(inputFields(null), []);
  assert.deepEqual(inputFields("raw text"), [{ label: "Input", value: "raw text" }]);
  const [row] = inputFields({ text: "x".repeat(2000) });
  assert.equal(row.value.length, 500);
  assert.ok(row.value.endsWith("…"));
  assert.equal(inputFields(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]))).length, 20);
});

test("names read as words; the config's labels are found by the tool's name only", () => {
  assert.equal(titleFromName("stream_id"), "Stream id");
  assert.equal(titleFromName("newName"), "New name");
  assert.equal(titleFromName("fetch_URL"), "Fetch URL");
  const config = { tool_fields: { rename_stream: { new_name: "New name" } } };
  assert.deepEqual(fieldLabels(config, "rename_stream"), { new_name: "New name" });
  assert.equal(fieldLabels(config, "constructor"), null);
  assert.equal(fieldLabels({}, "rename_stream"), null);
  assert.equal(fieldLabels(null, "rename_stream"), null);
});
