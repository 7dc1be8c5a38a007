// docs/tray.md's "Theming" table names every custom property tray.css declares, with the values it declares.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const css = readFileSync(new URL("../../chat/static/chat/tray.css", import.meta.url), "utf8");
const docs = readFileSync(new URL("../../docs/tray.md", import.meta.url), "utf8");
const table = docs.slice(docs.indexOf("## Theming"), docs.indexOf("\n## ", docs.indexOf("## Theming") + 1));
// each property's first declaration (later ones are the wide view's and the phone's)
const declared = (text) => {
  const found = new Map();
  for (const m of text.matchAll(/(--chat-[a-z-]+):\s*([^;]+);/g)) if (!found.has(m[1])) found.set(m[1], m[2].split("/*")[0].trim());
  return found;
};
const dark = css.slice(css.indexOf("@media (prefers-color-scheme: dark)"));

test("every property of tray.css is in the Theming table", () => {
  const missing = [...declared(css).keys()].filter((name) => !table.includes(`\`${name}\``));
  assert.deepEqual(missing, []);
});

test("the table's values are the style sheet's, light and dark", () => {
  const rows = table.split("\n").filter((line) => line.startsWith("| `--chat-") && !line.includes("--chat-hl-"));
  assert.ok(rows.length > 10);
  const light = declared(css.slice(0, css.indexOf("@media (prefers-color-scheme: dark)")));
  const darkValues = declared(dark.slice(0, dark.indexOf("\n}\n")));
  for (const row of rows) {
    const [names, lightCell, darkCell] = row.split("|").slice(1, 4).map((cell) => cell.trim());
    const list = (cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    list(names).forEach((name, i) => {
      assert.equal(list(lightCell)[i], light.get(name), `${name} (light)`);
      if (darkValues.has(name)) assert.equal(list(darkCell)[i], darkValues.get(name), `${name} (dark)`);
    });
  }
});
