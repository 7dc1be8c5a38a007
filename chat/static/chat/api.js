/** REST client for conversations (session cookie auth; CSRF header on unsafe methods). */
import { gettext, interpolate } from "./i18n.js";

/** `path` with the parameters that have a value (null leaves one out) as its query string. */
function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== null) query.set(name, String(value));
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

export class ChatApi {
  constructor(base, csrfToken) {
    this.base = base.endsWith("/") ? base : `${base}/`;
    this.csrfToken = csrfToken || "";
  }

  async request(method, path, body) {
    const headers = { Accept: "application/json" };
    if (!["GET", "HEAD", "OPTIONS"].includes(method)) headers["X-CSRFToken"] = this.csrfToken;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(this.base + path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) {
      const error = new Error(`${method} ${path} failed: ${response.status}`);
      error.status = response.status;
      throw error;
    }
    return response.status === 204 ? null : response.json();
  }

  /** [{id, title, page, updated_at}], most recently updated first; `q` finds text in titles and messages, `limit` and
   * `offset` take one part of the list (all of it without a limit). */
  async listConversations({ q = "", limit = null, offset = 0 } = {}) {
    const data = await this.request("GET", withQuery("conversations/", { q: q || null, limit, offset: offset || null }));
    // Tolerate DRF pagination in case it is switched on later.
    return Array.isArray(data) ? data : data?.results ?? [];
  }

  /** {instructions, updated_at}: what the user asked every answer to take into account ("" when nothing). */
  getPreferences() {
    return this.request("GET", "preferences/");
  }

  /** Save the user's preferences ("" clears them): {instructions, updated_at}. */
  setPreferences(instructions) {
    return this.request("PUT", "preferences/", { instructions });
  }

  /** {id, title, messages: [...], has_earlier}: all its messages, or the latest `limit` (older than message `before`). */
  getConversation(id, { limit = null, before = null } = {}) {
    return this.request("GET", withQuery(`conversations/${encodeURIComponent(id)}/`, { limit, before }));
  }

  /** Rename a conversation: {id, title, ...}. */
  renameConversation(id, title) {
    return this.request("PATCH", `conversations/${encodeURIComponent(id)}/`, { title });
  }

  /** Pin a conversation to the top of the list, or unpin it: {id, pinned, ...}. */
  pinConversation(id, pinned) {
    return this.request("PATCH", `conversations/${encodeURIComponent(id)}/`, { pinned });
  }

  /** Mark one of the user's answers: {feedback, feedback_comment, payload_outcome} (any subset). */
  markMessage(id, fields) {
    return this.request("PATCH", `messages/${encodeURIComponent(id)}/`, fields);
  }

  deleteConversation(id) {
    return this.request("DELETE", `conversations/${encodeURIComponent(id)}/`);
  }

  /** {deleted: n}: every conversation of the user. */
  deleteAllConversations() {
    return this.request("POST", "conversations/delete-all/");
  }

  /**
   * Upload a file as an unsent attachment: {id, name, content_type, size, width, height, url, thumbnail_url}.
   * A refusal throws an Error whose message is the server's (too large, not an accepted type).
   */
  async uploadAttachment(file) {
    const form = new FormData();
    form.append("file", file, file.name || "pasted-image");
    const response = await fetch(`${this.base}attachments/`, {
      method: "POST",
      headers: { Accept: "application/json", "X-CSRFToken": this.csrfToken },
      credentials: "same-origin",
      body: form,
    });
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const error = new Error(data?.message || interpolate(gettext("The file could not be uploaded (%(status)s)."), { status: response.status }));
      error.status = response.status;
      error.code = data?.code;
      throw error;
    }
    return data;
  }

  /** Remove an attachment that was not sent. */
  discardAttachment(id) {
    return this.request("DELETE", `attachments/${encodeURIComponent(id)}/`);
  }

  /** The address of the download of all the user's conversations (one JSON file); the session cookie authenticates it. */
  exportAllUrl() {
    return `${this.base}conversations/export/`;
  }

  /** The address of a conversation's download (`markdown` or `json`); the session cookie authenticates it. */
  exportUrl(id, format = "markdown") {
    return `${this.base}conversations/${encodeURIComponent(id)}/export/?format=${encodeURIComponent(format)}`;
  }
}
