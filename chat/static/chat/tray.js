/**
 * The chat tray: entry module loaded by templates/chat/tray.html.
 *
 * State lives here (conversation, the in-flight run, seq bookkeeping); rendering is
 * delegated to messages.js (finished messages), live.js (the in-flight turn) and panel.js
 * (payload + diagnostics panel). The socket speaks protocol v1 (DESIGN.md section 5).
 * Pages talk to the tray only through registry.js.
 */
import "./payloads.js"; // registers the global payload handlers
import "./actions.js"; // registers the built-in client actions
import { getContext, setTray } from "./registry.js";
import { ChatSocket } from "./socket.js";
import { ChatApi } from "./api.js";
import { h, button, icon, ICONS } from "./dom.js";
import { LiveTurn } from "./live.js";
import { HistoryView } from "./history.js";
import { FloatingPanel, payloadOpensPanel, showDiagnostics, showPayload } from "./panel.js";
import { normalizeMessage, renderAssistantMessage, renderUserMessage } from "./messages.js";

const STORAGE_KEY = "chat-tray:v1";
const NOTICE_MS = 4000;

/** RFC 4122 v4; crypto.randomUUID exists only in secure contexts, getRandomValues everywhere. */
export function uuid4() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export class Tray {
  constructor(root, config) {
    this.root = root;
    this.config = config;
    this.api = new ChatApi(config.api_base || "/api/", config.csrf_token);
    this.socket = new ChatSocket(config.ws_url || "/ws/chat/", {
      onEvent: (msg) => this.onEvent(msg),
      onOpen: () => this.onSocketOpen(),
      onStateChange: (state) => this.onSocketState(state),
      wantsConnection: () => this.run !== null,
      onGiveUp: () => this.onConnectionLost(),
    });
    this.conversationId = null;
    this.lastRole = null; // role of the last rendered message ("user" means a reply is owed)
    this.run = null; // {runId, frame, live, cancelRequested, reresumes}
    this.seenSeq = new Map(); // run_id -> last seq applied
    this.lastRequest = null; // {message, interactionType, actionMetadata} for Retry
    this.payloadOutcomes = new Map();
    this.loaded = false;
    this.loading = null; // the history request in flight, if any
    this.build();
    this.restore();
  }

  // ---- DOM -------------------------------------------------------------------------------------

  build() {
    const pageLabel = String(this.config.page || "this page").replaceAll("_", " ");
    this.launcher = h(
      "button",
      { type: "button", class: "chat-launcher", "aria-label": "Open chat", "aria-expanded": "false", "aria-controls": "chat-tray-panel", onclick: () => this.toggle() },
      icon(ICONS.chat, "chat-icon chat-launcher__icon"),
      h("span", { class: "chat-launcher__label" }, "Chat"),
    );
    this.listButton = button("History", () => this.toggleConversations(), { cls: "chat-header-btn", title: "Your conversations" });
    this.listButton.setAttribute("aria-pressed", "false");
    this.header = h(
      "header",
      { class: "chat-tray__header" },
      h(
        "div",
        { class: "chat-tray__heading" },
        h("h2", { class: "chat-tray__title", id: "chat-tray-title" }, "Assistant"),
        this.config.offline ? h("span", { class: "chat-badge chat-badge--offline", title: "Offline demo model — no API key configured" }, "offline model") : null,
      ),
      h(
        "div",
        { class: "chat-tray__header-actions" },
        this.listButton,
        button("New chat", () => this.newConversation(), { cls: "chat-header-btn chat-new-btn" }),
        button("×", () => this.close(), { cls: "chat-icon-btn", ariaLabel: "Close chat" }),
      ),
    );
    this.connectionEl = h("div", { class: "chat-connection", role: "status", hidden: true });
    this.welcome = h(
      "div",
      { class: "chat-welcome" },
      h("p", { class: "chat-welcome__title" }, `Hi${this.config.user ? ` ${this.config.user}` : ""}! How can I help?`),
      h("p", { class: "chat-muted" }, `I can see you are on the ${pageLabel} page and can help with what is on it.`),
      this.config.offline ? h("p", { class: "chat-offline-note" }, "Offline demo model — no API key configured") : null,
    );
    this.log = h("div", { class: "chat-log", role: "log", "aria-live": "polite", "aria-label": "Conversation" }, this.welcome);
    this.history = new HistoryView(this);
    this.noticeEl = h("div", { class: "chat-notice", role: "status", "aria-live": "polite", hidden: true });

    this.input = h("textarea", { class: "chat-input", rows: "1", placeholder: "Ask something…", "aria-label": "Message" });
    this.input.addEventListener("keydown", (e) => {
      // Enter sends, Shift+Enter is a newline; never interrupt an IME composition.
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
    });
    this.input.addEventListener("input", () => this.autosize());
    this.sendButton = h("button", { type: "submit", class: "chat-btn chat-btn--primary chat-send-btn" }, "Send");
    this.stopButton = button("Stop", () => this.cancel(), { cls: "chat-btn chat-btn--warning chat-stop-btn", ariaLabel: "Stop generating" });
    this.stopButton.hidden = true;
    this.composer = h("form", { class: "chat-composer" }, this.input, this.sendButton, this.stopButton);
    this.composer.addEventListener("submit", (e) => {
      e.preventDefault();
      this.submit();
    });

    this.panelEl = h(
      "aside",
      { class: "chat-tray", id: "chat-tray-panel", "aria-labelledby": "chat-tray-title", hidden: true },
      this.header,
      this.connectionEl,
      this.history.el,
      this.log,
      this.noticeEl,
      this.composer,
    );
    this.root.replaceChildren(this.launcher, this.panelEl);
    this.panel = new FloatingPanel(this.root);
    // Escape closes the panel, then the tray - when focus is in the tray or nowhere in
    // particular, so a page's own dialogs keep their Escape.
    document.addEventListener("keydown", (e) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      const focus = document.activeElement;
      if (focus && focus !== document.body && !this.root.contains(focus)) return;
      if (this.panel.isOpen) this.panel.close();
      else if (this.isOpen) this.close();
      else return;
      e.preventDefault();
    });
  }

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 160)}px`;
  }

  // ---- open / close / persistence ----------------------------------------------------------------

  get isOpen() {
    return !this.panelEl.hidden;
  }

  open({ focus = true } = {}) {
    this.panelEl.hidden = false;
    this.root.classList.add("is-open");
    this.launcher.setAttribute("aria-expanded", "true");
    this.launcher.setAttribute("aria-label", "Close chat");
    this.persist();
    this.ensureLoaded();
    if (focus) this.input.focus();
    this.scrollToEnd(true);
  }

  close() {
    this.panel.close();
    this.panelEl.hidden = true;
    this.root.classList.remove("is-open");
    this.launcher.setAttribute("aria-expanded", "false");
    this.launcher.setAttribute("aria-label", "Open chat");
    this.persist();
    this.launcher.focus();
  }

  toggle() {
    if (this.isOpen) this.close();
    else this.open();
  }

  persist() {
    try {
      const state = { conversationId: this.conversationId, open: this.isOpen, runId: this.run?.runId ?? null };
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify(state));
    } catch {
      // Storage can be disabled; the tray still works, it just forgets on navigation.
    }
  }

  /** Pick up the tab's conversation (and a run still streaming) after a page navigation. */
  restore() {
    let state = {};
    try {
      state = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "{}") || {};
    } catch {
      state = {};
    }
    this.conversationId = Number.isInteger(state.conversationId) ? state.conversationId : null;
    this.pendingRunId = typeof state.runId === "string" ? state.runId : null;
    if (state.open) this.open({ focus: false }); // reopen after navigation without stealing focus
  }

  /** Load the stored conversation the first time the tray is shown. */
  ensureLoaded() {
    if (this.loaded) return;
    this.loaded = true;
    if (this.conversationId === null) return;
    const runId = this.pendingRunId;
    this.pendingRunId = null;
    // Sends made meanwhile wait for this (see send), so history never wipes a new turn.
    this.loading = this.loadConversation(this.conversationId, { quiet: true, runId }).finally(() => {
      this.loading = null;
    });
  }

  /** Follow a run we did not start in this page (after navigation, or opened from history). */
  attachRun(runId) {
    this.run = { runId, frame: null, live: this.addLiveTurn(), cancelRequested: false, reresumes: 0 };
    this.setBusy(true);
    this.persist();
    if (this.socket.isOpen) this.onSocketOpen();
    else this.socket.connect();
  }

  // ---- sending -----------------------------------------------------------------------------------

  submit() {
    const text = this.input.value;
    if (!text.trim() || this.run) return;
    this.input.value = "";
    this.autosize();
    this.send(text, "text_input");
  }

  /** Send a message (typed, chip, or server action). Returns false if a run is in flight. */
  send(message, interactionType = "text_input", actionMetadata = null) {
    const text = String(message ?? "").trim();
    if (!text) return false;
    if (this.run) {
      this.notice("Please wait for the current reply, or stop it first.", "error");
      return false;
    }
    if (!this.isOpen) this.open();
    if (this.loading) {
      this.loading.then(() => this.send(message, interactionType, actionMetadata));
      return true;
    }
    this.showChat();
    this.clearError();
    this.removeSuggestions();
    this.appendMessageEl(renderUserMessage(text));
    this.lastRole = "user";
    this.lastRequest = { message: text, interactionType, actionMetadata };
    this.startRun();
    return true;
  }

  /** Re-send the last request with a NEW client_message_id (it is a new attempt, not a resend). */
  retry() {
    if (!this.lastRequest || this.run) return;
    this.clearError();
    this.startRun();
  }

  startRun() {
    const { message, interactionType, actionMetadata } = this.lastRequest;
    const frame = {
      type: "chat.send",
      client_message_id: uuid4(),
      conversation_id: this.conversationId,
      message,
      context: { ...(this.config.context || {}), ...getContext(), current_page: this.config.page },
      interaction_type: interactionType,
    };
    if (actionMetadata) frame.action_metadata = actionMetadata;
    this.run = { runId: null, frame, live: this.addLiveTurn(), cancelRequested: false, reresumes: 0 };
    this.setBusy(true);
    // If the socket is not open, onSocketOpen sends the frame once it is.
    if (!this.socket.sendNow(frame)) this.socket.connect();
  }

  cancel() {
    const run = this.run;
    if (!run) return;
    run.live.setStatus("Stopping…");
    if (run.runId) this.socket.send({ type: "chat.cancel", run_id: run.runId });
    else run.cancelRequested = true; // sent as soon as the server tells us the run id
  }

  approve(toolUseId, approved) {
    if (this.run?.runId) this.socket.send({ type: "chat.approve", run_id: this.run.runId, tool_use_id: toolUseId, approved });
  }

  addLiveTurn() {
    const live = new LiveTurn({ approve: (id, ok) => this.approve(id, ok) });
    this.appendMessageEl(live.el);
    return live;
  }

  setBusy(busy) {
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
    this.root.classList.toggle("is-busy", busy);
  }

  // ---- socket ------------------------------------------------------------------------------------

  /** Re-establish the run after (re)connecting: resend an unacknowledged send, or resume. */
  onSocketOpen() {
    const run = this.run;
    if (!run) return;
    if (!run.runId) {
      // Same client_message_id: the server is idempotent on it, so a lost ack cannot double-send.
      this.socket.sendNow(run.frame);
    } else {
      this.socket.sendNow({ type: "chat.resume", run_id: run.runId, after_seq: this.seenSeq.get(run.runId) ?? 0 });
    }
  }

  /** The socket stopped retrying: end the turn visibly instead of spinning forever. */
  onConnectionLost() {
    if (!this.run) return;
    this.finishPartial("interrupted");
    this.showError("Lost the connection to the server.");
  }

  onSocketState(state) {
    const show = state === "reconnecting" && this.run !== null;
    this.connectionEl.hidden = !show;
    this.connectionEl.textContent = show ? "Connection lost — reconnecting…" : "";
  }

  onEvent(msg) {
    if (!msg || typeof msg.type !== "string") return;
    // Frame-level answers carry no seq (and usually no run_id).
    if (typeof msg.seq !== "number") {
      if (msg.type === "error") this.onFrameError(msg);
      return;
    }
    const run = this.run;
    if (!run) return; // a run we stopped showing (new chat, other conversation)
    if (run.runId === null) {
      run.runId = msg.run_id; // the first event acknowledges our chat.send
      this.persist();
      if (run.cancelRequested) this.socket.send({ type: "chat.cancel", run_id: run.runId });
    } else if (msg.run_id !== run.runId) {
      return;
    }
    const known = this.seenSeq.has(run.runId);
    const last = this.seenSeq.get(run.runId) ?? 0;
    if (known && msg.seq <= last) return; // a duplicate replayed after resume
    if (known && msg.seq > last + 1) {
      // A gap should not happen on one socket; ask once for the missing events rather than show holes.
      if (run.gapAt !== last) {
        run.gapAt = last;
        this.socket.sendNow({ type: "chat.resume", run_id: run.runId, after_seq: last });
      }
      return;
    }
    this.seenSeq.set(run.runId, msg.seq);
    if (msg.conversation_id !== null && msg.conversation_id !== undefined && msg.conversation_id !== this.conversationId) {
      this.conversationId = msg.conversation_id;
      this.persist();
    }
    const handler = EVENT_HANDLERS[msg.type];
    if (handler) handler.call(this, msg, run);
    this.scrollToEnd();
  }

  onFrameError(msg) {
    const run = this.run;
    if (msg.run_id && msg.run_id !== run?.runId) return; // about a run we no longer show
    if (msg.code === "resync") {
      // The server can no longer replay what we missed: the database is the truth now.
      this.endRun();
      this.reloadConversation();
      return;
    }
    if (run && run.runId === null) {
      // Our chat.send was refused (busy, rate_limited, action_rejected, not_found, too_large...).
      if (msg.code === "not_found") {
        this.conversationId = null; // a stale or foreign conversation id; retry starts a new one
        this.persist();
      }
      this.endRun();
      this.showError(msg.message || "The message could not be sent.");
      return;
    }
    if (run && msg.run_id === run.runId) {
      if (msg.code === "not_found") {
        // The run is gone (or was never ours): the stored conversation is what is left.
        this.endRun();
        this.reloadConversation();
        return;
      }
      if (run.reresumes < 3) {
        // The server lost our stream but not the run: pick it up where we are.
        run.reresumes += 1;
        this.socket.sendNow({ type: "chat.resume", run_id: run.runId, after_seq: this.seenSeq.get(run.runId) ?? 0 });
        return;
      }
    }
    this.notice(msg.message || "Something went wrong.", "error");
  }

  // ---- run end -----------------------------------------------------------------------------------

  /**
   * Remove the in-flight turn's element and forget the run. Not a cancel: a run we stop
   * following still finishes on the server and is saved there.
   */
  endRun() {
    const run = this.run;
    if (!run) return;
    run.live.finish();
    run.live.el.remove();
    this.run = null;
    this.setBusy(false);
    this.onSocketState(this.socket.state);
    this.persist();
  }

  finishComplete(payload) {
    const message = normalizeMessage({ ...payload, role: "assistant" });
    if (payload.conversation_id) this.conversationId = payload.conversation_id;
    this.endRun();
    this.addAssistantMessage(message);
    if (message.custom_payload && payloadOpensPanel(message.custom_payload)) this.openPayload(message.custom_payload);
  }

  finishPartial(status) {
    const live = this.run.live;
    const message = normalizeMessage({ role: "assistant", content: live.text, tool_history: live.toolHistory, status });
    this.endRun();
    if (message.content.trim() || status === "cancelled") this.addAssistantMessage(message);
  }

  addAssistantMessage(message) {
    this.removeSuggestions();
    this.appendMessageEl(renderAssistantMessage(message, this, { latest: true }));
    this.lastRole = "assistant";
  }

  // ---- conversations ------------------------------------------------------------------------------

  /**
   * Render a conversation from REST. A trailing assistant message still "streaming" is the
   * reply of a live run: it is not rendered but followed (its run_id comes from the message
   * if the API gives one, else from `runId`, the run this tab was following). Returns true on success.
   */
  async loadConversation(id, { quiet = false, runId = null } = {}) {
    let data;
    try {
      data = await this.api.getConversation(id);
    } catch (err) {
      if (err.status === 404) {
        this.conversationId = null;
        this.persist();
      }
      if (!quiet) this.notice("Could not load that conversation.", "error");
      return false;
    }
    if (this.run) this.endRun();
    this.clearMessages();
    this.conversationId = data.id ?? id;
    const messages = (data.messages || []).filter((m) => m.role === "user" || m.role === "assistant");
    const tail = messages.at(-1);
    const liveRunId = tail?.role === "assistant" && tail.status === "streaming" ? tail.run_id || runId : null;
    if (liveRunId) messages.pop();
    messages.forEach((m, i) => {
      if (m.role === "user") this.appendMessageEl(renderUserMessage(m.content ?? ""));
      else this.appendMessageEl(renderAssistantMessage(normalizeMessage(m), this, { latest: i === messages.length - 1 }));
      this.lastRole = m.role;
    });
    this.loaded = true;
    this.persist();
    this.showChat();
    this.scrollToEnd(true);
    // Without a placeholder message (older servers) a trailing user message means the same.
    const follow = liveRunId || (runId && this.lastRole === "user" ? runId : null);
    if (follow) this.attachRun(follow);
    return true;
  }

  reloadConversation() {
    if (this.conversationId !== null) return this.loadConversation(this.conversationId);
    return Promise.resolve(false);
  }

  /** Forget the conversation (and stop any run) and show the welcome state. */
  reset() {
    if (this.run?.runId) this.socket.send({ type: "chat.cancel", run_id: this.run.runId });
    this.endRun();
    this.panel.close();
    this.clearMessages();
    this.conversationId = null;
    this.lastRequest = null;
    this.persist();
  }

  newConversation() {
    this.reset();
    this.showChat();
    this.input.focus();
  }

  toggleConversations() {
    if (this.history.isOpen) {
      this.showChat();
    } else {
      this.log.hidden = true;
      this.listButton.setAttribute("aria-pressed", "true");
      this.history.show();
    }
  }

  showChat() {
    this.history.hide();
    this.log.hidden = false;
    this.listButton.setAttribute("aria-pressed", "false");
  }

  // ---- panels ----------------------------------------------------------------------------------------

  openPayload(payload) {
    showPayload(this.panel, payload, this);
  }

  openDiagnostics(diagnostics) {
    showDiagnostics(this.panel, diagnostics);
  }

  /** Remember Accept/Reject so the message's view button says what happened. */
  markPayload(payload, outcome) {
    if (payload?.payload_id === undefined) return;
    this.payloadOutcomes.set(String(payload.payload_id), outcome);
    for (const el of this.log.querySelectorAll(".chat-msg__tools")) {
      if (el.dataset.payloadId === String(payload.payload_id)) {
        el.querySelector(".chat-payload-outcome")?.remove();
        el.append(h("span", { class: `chat-tag chat-payload-outcome chat-tag--${outcome}` }, outcome));
      }
    }
  }

  // ---- small UI helpers --------------------------------------------------------------------------

  appendMessageEl(el) {
    this.welcome.hidden = true;
    this.log.append(el);
    this.scrollToEnd(true);
  }

  clearMessages() {
    this.clearError();
    this.log.replaceChildren(this.welcome);
    this.welcome.hidden = false;
    this.lastRole = null;
  }

  removeSuggestions() {
    for (const el of this.log.querySelectorAll(".chat-suggestions")) el.remove();
  }

  showError(message) {
    this.clearError();
    this.errorEl = h(
      "div",
      { class: "chat-error", role: "alert" },
      h("span", { class: "chat-error-text" }, message),
      this.lastRequest ? button("Retry", () => this.retry(), { cls: "chat-btn chat-btn--secondary chat-retry-btn" }) : null,
    );
    this.log.append(this.errorEl);
    this.scrollToEnd(true);
  }

  clearError() {
    this.errorEl?.remove();
    this.errorEl = null;
  }

  /** A transient note in the tray (copy confirmations, refused actions). */
  notice(text, kind = "info") {
    this.noticeEl.textContent = text;
    this.noticeEl.className = `chat-notice chat-notice--${kind}`;
    this.noticeEl.hidden = false;
    clearTimeout(this.noticeTimer);
    this.noticeTimer = setTimeout(() => {
      this.noticeEl.hidden = true;
    }, NOTICE_MS);
  }

  /** Follow new content unless the user scrolled up to read. */
  scrollToEnd(force = false) {
    const log = this.log;
    if (force || log.scrollHeight - log.scrollTop - log.clientHeight < 80) log.scrollTop = log.scrollHeight;
  }
}

// Server event type -> handler; `this` is the tray. Lookup, not a switch, so adding an event
// type is one entry.
const EVENT_HANDLERS = {
  status(msg, run) {
    run.live.setStatus(msg.message);
  },
  text_delta(msg, run) {
    run.live.appendText(msg.text ?? "");
  },
  tool_start(msg, run) {
    run.live.toolStart(msg);
  },
  tool_progress(msg, run) {
    run.live.toolProgress(msg);
  },
  tool_complete(msg, run) {
    run.live.toolComplete(msg);
  },
  tool_approval(msg, run) {
    run.live.approvalRequest(msg);
  },
  complete(msg) {
    this.finishComplete({ ...(msg.payload || {}), conversation_id: msg.payload?.conversation_id ?? msg.conversation_id });
  },
  cancelled() {
    this.finishPartial("cancelled");
  },
  error(msg) {
    this.finishPartial("error");
    this.showError(msg.message || "Something went wrong.");
  },
};

function boot() {
  const root = document.querySelector("[data-chat-tray]");
  const configEl = document.getElementById("chat-tray-config");
  if (!root || !configEl || root.dataset.chatTrayReady) return;
  root.dataset.chatTrayReady = "1";
  let config;
  try {
    config = JSON.parse(configEl.textContent);
  } catch (err) {
    console.error("chat tray: bad config", err);
    return;
  }
  const tray = new Tray(root, config);
  setTray(tray);
}

boot();
