/**
 * What the tray itself knows about payloads: the generic fallback card for a type no renderer
 * is registered for, and the tool_history built-in. Renderers of a site's own payload types
 * live in the site's static files (see registerPayloadRenderer in pagechat.js).
 * Payload data is model/tool output: everything here is built with DOM APIs and textContent.
 */
import { registerBuiltinPayloadHandler } from "./registry.js";
import { h, jsonText } from "./dom.js";
import { gettext } from "./i18n.js";

const MAX_FIELDS = 50; // a card, not a dump: the rest is counted

/**
 * The card for an unknown payload type: its summary, then its data as key/value rows (nested
 * values as pretty JSON), or as pretty JSON when the data is not an object. Text only.
 */
export function fallbackCard(payload) {
  const data = payload?.data;
  const card = h("div", { class: "chat-fallback-card" });
  if (payload?.summary) card.append(h("p", { class: "chat-fallback-card__summary" }, String(payload.summary)));
  if (data !== null && typeof data === "object" && !Array.isArray(data)) {
    const entries = Object.entries(data);
    const list = h("dl", { class: "chat-fallback-card__data" });
    for (const [key, value] of entries.slice(0, MAX_FIELDS)) list.append(h("dt", {}, key), h("dd", {}, fieldValue(value)));
    card.append(entries.length ? list : h("p", { class: "chat-muted" }, gettext("No details.")));
    if (entries.length > MAX_FIELDS) card.append(h("p", { class: "chat-muted" }, `… and ${entries.length - MAX_FIELDS} more`));
  } else if (data !== undefined && data !== null) {
    card.append(h("pre", { class: "chat-pre" }, jsonText(data)));
  }
  return card;
}

function fieldValue(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "object") return h("pre", { class: "chat-pre" }, jsonText(value));
  return String(value);
}

// The older spec sends tool history as a custom payload; fold it into the message's inline
// tool cards instead of opening a panel.
registerBuiltinPayloadHandler("tool_history", {
  panel: false,
  augment(message, data) {
    if (Array.isArray(data) && !(message.tool_history && message.tool_history.length)) {
      message.tool_history = data;
    }
  },
});
