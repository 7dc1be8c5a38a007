/**
 * Message rendering: user bubbles, final assistant messages (sanitized server HTML with
 * inline tool cards), chips and action buttons. Pure functions of a message object plus
 * the tray for callbacks, so live turns and REST-loaded history render identically.
 */
import { h, button, icon, ICONS, jsonText, sanitizeHtml } from "./dom.js";
import { renderText } from "./markdown.js";
import { runSuggestedAction } from "./actions.js";
import { findPayloadHandler } from "./registry.js";

const STYLES = new Set(["primary", "secondary", "warning"]);
// Message statuses (from the run's end) that deserve a visible tag.
const STATUS_TAGS = {
  cancelled: { cls: "stopped", text: "stopped" },
  error: { cls: "error", text: "incomplete" },
  interrupted: { cls: "error", text: "interrupted" },
  streaming: { cls: "stopped", text: "still being written…" },
};

/** Normalize a complete payload or a REST message into the one shape the renderer uses. */
export function normalizeMessage(raw) {
  const message = {
    id: raw.message_id ?? raw.id ?? null,
    role: raw.role ?? "assistant",
    content: raw.message ?? raw.content ?? "",
    message_html: raw.message_html ?? "",
    suggested_values: Array.isArray(raw.suggested_values) ? raw.suggested_values : [],
    suggested_actions: Array.isArray(raw.suggested_actions) ? raw.suggested_actions : [],
    custom_payload: raw.custom_payload ?? null,
    tool_history: Array.isArray(raw.tool_history) ? raw.tool_history : [],
    status: raw.status ?? "complete",
    diagnostics: raw.diagnostics ?? null,
  };
  // A handler may fold its payload into the message instead of opening a panel.
  const handler = message.custom_payload && findPayloadHandler(message.custom_payload.type);
  if (handler && typeof handler.augment === "function") {
    try {
      handler.augment(message, message.custom_payload.data);
    } catch (err) {
      console.error("chat tray: payload augment failed", err);
    }
  }
  return message;
}

export function renderUserMessage(text) {
  return h("div", { class: "chat-msg chat-msg--user" }, h("div", { class: "chat-bubble chat-bubble--user" }, text));
}

/** Collapsible card for tool_history[index]; collapsed by default. */
export function toolCard(index, entry) {
  const name = entry?.tool_name ?? entry?.tool ?? `tool ${index}`;
  const details = h(
    "div",
    { class: "chat-tool-card__body", hidden: true },
    h("div", { class: "chat-tool-card__label" }, "Input"),
    h("pre", { class: "chat-pre" }, jsonText(entry?.input ?? {})),
    h("div", { class: "chat-tool-card__label" }, "Output"),
    h("pre", { class: "chat-pre" }, jsonText(entry?.output ?? "")),
  );
  const toggle = h(
    "button",
    { type: "button", class: "chat-tool-card__header", "aria-expanded": "false" },
    icon(ICONS.tool, "chat-icon chat-tool-card__icon"),
    h("span", { class: "chat-tool-card__name" }, name),
    h("span", { class: "chat-tool-card__chevron", "aria-hidden": "true" }, "▸"),
  );
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    details.hidden = !open;
  });
  return h("div", { class: "chat-tool-card", dataset: { toolIndex: String(index) } }, toggle, details);
}

/** The final message body: server HTML (re-sanitized) or, lacking it, safe text rendering. */
function messageBody(message) {
  const body = h("div", { class: "chat-bubble chat-bubble--assistant chat-md" });
  const card = (index) => toolCard(index, message.tool_history[index]);
  if (message.message_html) {
    body.append(sanitizeHtml(message.message_html));
    for (const slot of body.querySelectorAll(".tool-slot[data-tool-index]")) {
      slot.replaceWith(card(Number(slot.dataset.toolIndex)));
    }
  } else {
    body.classList.add("chat-plain");
    body.append(renderText(message.content, card));
  }
  return body;
}

/** Chips and action buttons; only the latest assistant message gets them. */
export function renderSuggestions(message, tray) {
  const values = message.suggested_values.filter((v) => v && typeof v.value === "string");
  const actions = message.suggested_actions.filter((a) => a && typeof a.action === "string");
  if (!values.length && !actions.length) return null;
  const wrap = h("div", { class: "chat-suggestions" });
  if (values.length) {
    wrap.append(
      h(
        "div",
        { class: "chat-chips", role: "group", "aria-label": "Suggested replies" },
        values.map((v) => button(v.label || v.value, () => tray.send(v.value, "value_selected"), { cls: "chat-chip" })),
      ),
    );
  }
  if (actions.length) {
    wrap.append(
      h(
        "div",
        { class: "chat-actions", role: "group", "aria-label": "Suggested actions" },
        actions.map((a) => {
          const style = STYLES.has(a.style) ? a.style : "secondary";
          return button(a.label || a.action, () => runSuggestedAction(a, tray), { cls: `chat-btn chat-btn--${style}` });
        }),
      ),
    );
  }
  return wrap;
}

/** A whole assistant message: bubble, status tag, payload/diagnostics buttons, suggestions. */
export function renderAssistantMessage(message, tray, { latest = false } = {}) {
  const el = h("div", { class: "chat-msg chat-msg--assistant", dataset: { messageId: String(message.id ?? "") } });
  el.append(messageBody(message));
  const tag = STATUS_TAGS[message.status];
  if (tag) el.append(h("div", { class: `chat-tag chat-tag--${tag.cls}` }, tag.text));

  const payload = message.custom_payload;
  const payloadId = payload?.payload_id !== undefined && payload?.payload_id !== null ? String(payload.payload_id) : null;
  const tools = h("div", { class: "chat-msg__tools", dataset: payloadId ? { payloadId } : {} });
  const handler = payload && findPayloadHandler(payload.type);
  if (payload && !(handler && handler.panel === false)) {
    const label = handler?.title ? `View ${handler.title.toLowerCase()}` : "View details";
    tools.append(button(label, () => tray.openPayload(payload), { cls: "chat-link-btn chat-view-payload" }));
    if (payload.summary) tools.append(h("span", { class: "chat-muted" }, String(payload.summary)));
    const outcome = payloadId && tray.payloadOutcomes?.get(payloadId);
    if (outcome) tools.append(h("span", { class: `chat-tag chat-payload-outcome chat-tag--${outcome}` }, outcome));
  }
  if (tray.config.is_staff && message.diagnostics) {
    tools.append(button("Diagnostics", () => tray.openDiagnostics(message.diagnostics), { cls: "chat-link-btn chat-diagnostics-btn" }));
  }
  if (tools.childElementCount) el.append(tools);
  if (latest) {
    const suggestions = renderSuggestions(message, tray);
    if (suggestions) el.append(suggestions);
  }
  return el;
}
