/**
 * The one shape of a message the tray keeps and renders, without DOM: from a `complete` payload or a REST message,
 * and an answer as one of a later answer's earlier versions.
 */
import { findPayloadHandler } from "./registry.js";

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
    feedback: raw.feedback || "",
    feedback_comment: raw.feedback_comment || "",
    payload_outcome: raw.payload_outcome || "",
    stop_reason: raw.stop_reason || "",
    // what the answer cites as [N] (complete.payload.sources, and the REST message's sources)
    sources: Array.isArray(raw.sources) ? raw.sources : [],
    // answers a regenerate replaced, oldest first (the reader can page back to them)
    earlier_versions: Array.isArray(raw.earlier_versions) ? raw.earlier_versions.filter((v) => v && typeof v.content === "string") : [],
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

/** An answer as one of a later answer's earlier versions (the REST shape of `earlier_versions` items). */
export function versionOf(message) {
  const { id, content, message_html, tool_history, stop_reason } = message;
  return { id, content, message_html, tool_history, stop_reason };
}
