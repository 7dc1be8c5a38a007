/**
 * The tray's conversation state, without DOM: which conversation the tab is in, the run it
 * follows, the last seq applied per run, the messages shown, what happened to each payload,
 * and the last request (for Retry). The part that must survive a page navigation
 * (conversation, open, run, and the unsent draft: the composer's text and uploaded files)
 * goes through a small storage adapter, sessionStorage in the browser.
 */

export const STORAGE_KEY = "chat-tray:v1";
// A draft longer than this is kept whole on screen but not stored (sessionStorage holds a few MB per site).
export const DRAFT_MAX_CHARS = 100_000;
const EMPTY_DRAFT = Object.freeze({ user: "", text: "", files: Object.freeze([]) });

/** A stored draft, well-typed: whose it is, the text, and files as the upload API described them ({id, name, ...}). */
function draftOf(value) {
  if (!value || typeof value !== "object") return EMPTY_DRAFT;
  const user = typeof value.user === "string" ? value.user : "";
  const text = typeof value.text === "string" ? value.text : "";
  const files = Array.isArray(value.files)
    ? value.files.filter((f) => f && typeof f === "object" && typeof f.id === "string" && typeof f.name === "string")
    : [];
  return { user, text, files };
}

/**
 * An adapter over a Web Storage object: {load(): object, save(state)}. Storage can be disabled
 * or full; then the tray still works, it just forgets on navigation.
 * @param {() => Storage} getStorage  looked up on each call (reading window.sessionStorage can throw)
 */
export function webStorageAdapter(key = STORAGE_KEY, getStorage = () => globalThis.sessionStorage) {
  return {
    load() {
      try {
        const state = JSON.parse(getStorage().getItem(key) || "{}");
        return state && typeof state === "object" ? state : {};
      } catch {
        return {};
      }
    },
    save(state) {
      try {
        getStorage().setItem(key, JSON.stringify(state));
      } catch {
        // see above: forgetting on navigation is the only loss
      }
    },
  };
}

/** An in-memory adapter (tests, or a host that wants nothing stored). */
export function memoryAdapter(initial = {}) {
  let saved = JSON.stringify(initial);
  return {
    load: () => JSON.parse(saved),
    save(state) {
      saved = JSON.stringify(state);
    },
  };
}

export class ConversationStore {
  /** @param {{storage?: {load(): object, save(state)}}} options */
  constructor({ storage = memoryAdapter() } = {}) {
    this.storage = storage;
    this.conversationId = null;
    this.open = false; // the tray panel is shown
    this.runId = null; // the acknowledged run being followed
    this.pendingRunId = null; // a run restored from storage, followed once the conversation loads
    this.seenSeq = new Map(); // run_id -> last seq applied (the protocol client reads and writes it)
    this.messages = []; // [{role: "user"|"assistant", ...}] as shown, oldest first
    this.payloadOutcomes = new Map(); // String(payload_id) -> "accepted" | "rejected"
    this.lastRequest = null; // {message, interactionType, actionMetadata} for Retry
    this.draft = EMPTY_DRAFT; // {user, text, files}: what the composer holds, not sent yet, and whose it is
  }

  /** Read the stored state; returns it (the caller reopens the tray if it was open). */
  restore() {
    const state = this.storage.load();
    this.conversationId = Number.isInteger(state.conversationId) ? state.conversationId : null;
    this.pendingRunId = typeof state.runId === "string" && state.runId ? state.runId : null;
    this.open = state.open === true;
    this.draft = draftOf(state.draft);
    return { conversationId: this.conversationId, runId: this.pendingRunId, open: this.open, draft: this.draft };
  }

  persist() {
    const state = { conversationId: this.conversationId, open: this.open, runId: this.runId };
    if (this.draft.text || this.draft.files.length) state.draft = this.draft;
    this.storage.save(state);
  }

  /**
   * Keep the composer's unsent text and uploaded files (persisted: a navigation does not lose them), with the
   * user they belong to: the tab may be signed in as someone else on the next page, who must not see them.
   */
  setDraft(user, text, files = []) {
    const draft = draftOf({ user, text: text.length > DRAFT_MAX_CHARS ? "" : text, files });
    const same = draft.user === this.draft.user && draft.text === this.draft.text;
    if (same && JSON.stringify(draft.files) === JSON.stringify(this.draft.files)) return;
    this.draft = draft;
    this.persist();
  }

  /** Take the pending run from storage (once). */
  takePendingRun() {
    const runId = this.pendingRunId;
    this.pendingRunId = null;
    return runId;
  }

  /** Switch to a conversation id; true (and persisted) when it changed. Null/undefined are ignored. */
  setConversation(id) {
    if (id === null || id === undefined || id === this.conversationId) return false;
    this.conversationId = id;
    this.persist();
    return true;
  }

  /** Forget the conversation (a new one starts with the next message). */
  forgetConversation() {
    this.conversationId = null;
    this.persist();
  }

  setOpen(open) {
    this.open = Boolean(open);
    this.persist();
  }

  setRun(runId) {
    this.runId = runId ?? null;
    this.persist();
  }

  get lastRole() {
    return this.messages.at(-1)?.role ?? null;
  }

  addMessage(message) {
    this.messages.push(message);
  }

  clearMessages() {
    this.messages = [];
  }

  setPayloadOutcome(payloadId, outcome) {
    if (payloadId === null || payloadId === undefined) return false;
    this.payloadOutcomes.set(String(payloadId), outcome);
    return true;
  }

  payloadOutcome(payloadId) {
    return payloadId === null || payloadId === undefined ? undefined : this.payloadOutcomes.get(String(payloadId));
  }
}
