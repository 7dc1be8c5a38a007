/**
 * The conversation shown: loading it from REST (a part at a time, a live answer followed rather than drawn),
 * earlier messages on request, starting a new one, the conversation list, renaming.
 * Methods of the tray (controller.js); `this` is the tray.
 */
import { normalizeMessage } from "../message-shape.js";
import { gettext } from "../i18n.js";

// A conversation is read a part at a time: its latest messages when it opens, older ones when the reader asks.
export const PAGE_MESSAGES = 50;

/** The stored messages the tray shows: a standard client's answers to its own tool calls (interaction_type
 * "tool_result") are not something the user typed. */
export function shownMessages(messages) {
  return (messages || []).filter((m) => (m.role === "user" && m.interaction_type !== "tool_result") || m.role === "assistant");
}

export function conversationsState() {
  return {
    loaded: false,
    loading: null, // the history request in flight, if any
    earliestId: null, // the first stored message shown, while earlier ones exist to read
    loadingEarlier: false,
  };
}

export const conversations = {
  /** Load the stored conversation the first time the tray is shown. */
  ensureLoaded() {
    if (this.loaded) return;
    this.loaded = true;
    if (this.store.conversationId === null) return;
    const runId = this.store.takePendingRun();
    // Sends made meanwhile wait for this (see send), so history never wipes a new turn.
    this.loading = this.loadConversation(this.store.conversationId, { quiet: true, runId }).finally(() => {
      this.loading = null;
    });
  },

  /**
   * Render a conversation from REST. A trailing assistant message still "streaming" is the
   * reply of a live run: it is not rendered but followed (its run_id comes from the message
   * if the API gives one, else from `runId`, the run this tab was following). Returns true on success.
   */
  async loadConversation(id, { quiet = false, runId = null } = {}) {
    let data;
    try {
      data = await this.api.getConversation(id, { limit: PAGE_MESSAGES });
    } catch (err) {
      if (err.status === 404) this.store.forgetConversation();
      if (!quiet) this.notice(gettext("Could not load that conversation."), "error");
      return false;
    }
    if (this.protocol.following || this.live) this.endLive();
    this.clearMessages();
    this.store.conversationId = data.id ?? id;
    const messages = shownMessages(data.messages);
    const tail = messages.at(-1);
    const liveRunId = tail?.role === "assistant" && tail.status === "streaming" ? tail.run_id || runId : null;
    // the live answer is followed, not rendered: the versions it replaces wait for it (see addAssistantMessage)
    if (liveRunId) this.replacedVersions = normalizeMessage(messages.pop()).earlier_versions;
    messages.forEach((m, i) => {
      const { el, entry } = this.storedMessage(m, i === messages.length - 1);
      this.view.appendMessage(el);
      this.store.addMessage(entry);
    });
    this.earlierFrom(data);
    this.loaded = true;
    this.store.persist();
    // a quiet load (the restore after a page load, a reload after a reconnect) leaves the list the person opened meanwhile
    if (!quiet || !this.history.isOpen) this.showChat();
    this.view.refreshLatestActions();
    this.view.scrollToEnd(true);
    // Without a placeholder message (older servers) a trailing user message means the same.
    const follow = liveRunId || (runId && this.store.lastRole === "user" ? runId : null);
    if (follow) this.attachRun(follow);
    return true;
  },

  /** A stored message as shown (its element) and as kept in the store (its entry). */
  storedMessage(m, latest) {
    if (m.role === "user") {
      const typed = m.interaction_type || "text_input";
      return { el: this.render.userMessage(m.content ?? "", this, m.attachments, typed),
        entry: { role: "user", content: m.content ?? "", attachments: m.attachments || [], interaction_type: typed } };
    }
    const message = normalizeMessage(m);
    // the outcome is stored with the message: the proposal shows as decided after a reload
    if (message.payload_outcome && message.custom_payload) this.store.setPayloadOutcome(message.custom_payload.payload_id, message.payload_outcome);
    return { el: this.render.assistantMessage(message, this, { latest }), entry: message };
  },

  /** After a part of the conversation was read: where "Show earlier messages" reads on from, and whether it is offered. */
  earlierFrom(data) {
    this.earliestId = data.messages?.[0]?.id ?? null;
    this.view.showEarlier(Boolean(data.has_earlier) && this.earliestId !== null);
  },

  /** "Show earlier messages": the part of the conversation before the first message shown, above it. */
  async loadEarlier() {
    const id = this.store.conversationId;
    const before = this.earliestId;
    if (id === null || before === null || this.loadingEarlier) return;
    this.loadingEarlier = true;
    this.view.showEarlier(true, true);
    let data;
    try {
      data = await this.api.getConversation(id, { limit: PAGE_MESSAGES, before });
    } catch {
      this.view.showEarlier(true);
      this.notice(gettext("Could not load the earlier messages."), "error");
      return;
    } finally {
      this.loadingEarlier = false;
    }
    if (this.store.conversationId !== id || this.earliestId !== before) return; // another conversation is shown now
    const shown = shownMessages(data.messages).map((m) => this.storedMessage(m, false));
    this.store.messages.unshift(...shown.map((s) => s.entry));
    this.earlierFrom(data);
    this.view.prependMessages(shown.map((s) => s.el));
    this.view.refreshLatestActions(); // an older answer has no Regenerate, an older question no Edit
  },

  reloadConversation() {
    if (this.store.conversationId !== null) return this.loadConversation(this.store.conversationId);
    return Promise.resolve(false);
  },

  /** Forget the conversation (and stop any run) and show the welcome state. */
  reset() {
    this.protocol.cancel();
    this.endLive();
    this.panel.close();
    this.clearMessages();
    this.store.lastRequest = null;
    this.store.forgetConversation();
  },

  newConversation() {
    this.reset();
    this.showChat();
    this.view.focusInput();
  },

  toggleConversations() {
    if (this.history.isOpen) this.showChat();
    else this.view.showHistory(this.history);
  },

  showChat() {
    this.view.showLog(this.history);
  },

  clearMessages() {
    this.view.clearMessages();
    this.store.clearMessages();
    this.earliestId = null;
    this.replacedVersions = null; // they belonged to an answer of the conversation shown until now
    this.replacedAnswer = null;
  },

  /** Rename a conversation (the tray's conversation list). */
  async renameConversation(id, title) {
    try {
      return await this.api.renameConversation(id, title);
    } catch {
      this.notice(gettext("Could not rename that conversation."), "error");
      return null;
    }
  },
};
