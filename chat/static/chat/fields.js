/**
 * A tool's input as a person reads it: labelled fields, never JSON. An approval shows the fields its server sent
 * (`tool_approval.fields`, labelled from the tool's schema in the user's language); a tool card, and an approval
 * from a server before those, build the same rows here from the input, labelled by the tray config's
 * `tool_fields` (the page's tools: name -> {key: label}) or else by the key in words. Both render with `fieldList`.
 */
import { h } from "./dom.js";
import { gettext } from "./i18n.js";

// as the server bounds an approval's rows (tools.spec: APPROVAL_FIELDS_MAX, APPROVAL_VALUE_MAX_CHARS)
const FIELDS_MAX = 20;
const VALUE_MAX_CHARS = 500;

/** A name as words: "stream_id" -> "Stream id", "newName" -> "New name" (words in capitals stay: "fetch_URL" -> "Fetch URL"). */
export function titleFromName(name) {
  const parts = String(name ?? "")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[\s_\-.]+/)
    .filter(Boolean);
  const text = parts.map((p) => (p.length > 1 && p === p.toUpperCase() && /[A-Z]/.test(p) ? p : p.toLowerCase())).join(" ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A value as plain text: text as it is, yes/no, numbers, lists joined by commas, objects as "Label: value" pairs. */
export function plainValue(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "boolean") return value ? gettext("yes") : gettext("no");
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (Array.isArray(value)) return value.slice(0, FIELDS_MAX).map(plainValue).join(", ");
  if (typeof value === "object") {
    return Object.entries(value).slice(0, FIELDS_MAX).map(([k, v]) => `${titleFromName(k) || k}: ${plainValue(v)}`).join("; ");
  }
  return String(value);
}

function clip(text, limit) {
  return text.length <= limit ? text : `${text.slice(0, limit - 1).trimEnd()}…`;
}

/**
 * The input as `{label, value}` rows in its own order; `labels` (key -> label, the config's for this tool) names a
 * key, else its words do. Input that is not an object (a client's odd call) is one row, "Input".
 */
export function inputFields(input, labels = null) {
  const own = labels && typeof labels === "object" ? labels : {};
  if (!input || typeof input !== "object" || Array.isArray(input)) {
    return input === undefined || input === null || input === "" ? [] : [{ label: gettext("Input"), value: clip(plainValue(input), VALUE_MAX_CHARS) }];
  }
  return Object.entries(input)
    .slice(0, FIELDS_MAX)
    .map(([key, value]) => ({
      label: Object.hasOwn(own, key) && typeof own[key] === "string" && own[key] ? own[key] : titleFromName(key) || key,
      value: clip(plainValue(value), VALUE_MAX_CHARS),
    }));
}

/** The labels the tray config gives the tool `name`'s input (`tool_fields`), or null. */
export function fieldLabels(config, name) {
  const all = config?.tool_fields;
  return all && typeof all === "object" && Object.hasOwn(all, name) ? all[name] : null;
}

/** Rows as a description list (text only: they carry what the model and the database said, never HTML). */
export function fieldList(rows, cls = "") {
  return h(
    "dl",
    { class: `chat-fields ${cls}`.trim() },
    rows.flatMap((f) => [h("dt", {}, String(f.label)), h("dd", {}, String(f.value ?? ""))]),
  );
}
