/**
 * The tray controller: what the user and the page can ask of the tray (open, send, stop,
 * retry, switch conversation, ...) and how the tray answers the protocol client's callbacks.
 * It holds no state of its own beyond the in-flight turn's view: conversation state is in the
 * store (store.js), the wire in the protocol client (protocol.js), REST in api.js, and the
 * DOM in the views (view.js, messages.js, live.js, panel.js, history.js).
 *
 * Pages get this object from getTray()/onTrayReady(); its public methods are open(), close(),
 * toggle(), send(message, interactionType, actionMetadata), newConversation(), reset(),
 * notice(text, kind), openPayload(customPayload), loadConversation(id).
 */
import { getContext } from "./registry.js";
import { chatSendFrame } from "./protocol.js";
import { LiveTurn } from "./live.js";
import { HistoryView } from "./history.js";
import { payloadOpensPanel, showDiagnostics, showPayload } from "./panel.js";
import { normalizeMessage, renderAssistantMessage, renderUserMessage } from "./messages.js";
import { TrayView } from "./view.js";

export class Tray {
  /**
   * @param {HTMLElement} root
   * @param {object} config  the tray config rendered by the template tag
   * @param {{store, api, createProtocol(hooks, seen)}} parts
   */
  constructor(root, config, { store, api, createProtocol }) {
    this.root = root;
    this.config = config;
    this.store = store;
    this.api = api;
    this.protocol = createProtocol(this.protocolHooks(), store.seenSeq);
    this.live = null; // the in-flight turn's view
    this.loaded = false;
    this.loading = null; // the history request in flight, if any
    this.view = new TrayView(root, config, {
      toggle: () => this.toggle(),
      close: () => this.close(),
      submit: (text) => this.send(text, "text_input"),
      stop: () => this.cancel(),
      newChat: () => this.newConversation(),
      toggleHistory: () => this.toggleConversations(),
    });
    this.history = new HistoryView(this);
    this.view.mountHistory(this.history.el);
    this.panel = this.view.panel;
  }

  /** Pick up the tab's conversation (and a run still streaming) after a page navigation. */
  start() {
    const { open } = this.store.restore();
    if (open) this.open({ focus: false }); // reopen after navigation without stealing focus
  }

  // ---- what views and pages read ------------------------------------------------------------------

  get conversationId() {
    return this.store.conversationId;
  }

  get payloadOutcomes() {
    return this.store.payloadOutcomes;
  }

  get isOpen() {
    return this.view.isOpen;
  }

  // ---- open / close --------------------------------------------------------------------------------

  open({ focus = true } = {}) {
    this.view.showOpen({ focus });
    this.store.setOpen(true);
    this.ensureLoaded();
  }

  close() {
    this.view.showClosed();
    this.store.setOpen(false);
  }

  toggle() {
    if (this.isOpen) this.close();
    else this.open();
  }

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
  }

  // ---- sending -----------------------------------------------------------------------------------

  /** Send a message (typed, chip, or server action). Returns false if a run is in flight. */
  send(message, interactionType = "text_input", actionMetadata = null) {
    const text = String(message ?? "").trim();
    if (!text) return false;
    if (this.protocol.following) {
      this.notice("Please wait for the current reply, or stop it first.", "error");
      return false;
    }
    if (!this.isOpen) this.open();
    if (this.loading) {
      this.loading.then(() => this.send(message, interactionType, actionMetadata));
      return true;
    }
    this.showChat();
    this.view.clearError();
    this.view.removeSuggestions();
    this.view.appendMessage(renderUserMessage(text));
    this.store.addMessage({ role: "user", content: text });
    this.store.lastRequest = { message: text, interactionType, actionMetadata };
    this.startRun();
    return true;
  }

  /** Re-send the last request with a NEW client_message_id (it is a new attempt, not a resend). */
  retry() {
    if (!this.store.lastRequest || this.protocol.following) return;
    this.view.clearError();
    this.startRun();
  }

  startRun() {
    const { message, interactionType, actionMetadata } = this.store.lastRequest;
    const frame = chatSendFrame({
      message,
      conversationId: this.store.conversationId,
      context: { ...(this.config.context || {}), ...getContext(), current_page: this.config.page },
      interactionType,
      actionMetadata,
    });
    this.beginLive();
    this.protocol.start(frame);
  }

  /** Follow a run we did not start in this page (after navigation, or opened from history). */
  attachRun(runId) {
    this.beginLive();
    this.store.setRun(runId);
    this.protocol.follow(runId);
  }

  cancel() {
    if (!this.protocol.following) return;
    this.live?.setStatus("Stopping…");
    this.protocol.cancel();
  }

  beginLive() {
    this.live = new LiveTurn({ approve: (id, ok) => this.protocol.approve(id, ok) });
    this.view.appendMessage(this.live.el);
    this.view.setBusy(true);
  }

  // ---- the protocol client's callbacks -------------------------------------------------------------

  protocolHooks() {
    return {
      onAck: (run) => this.store.setRun(run.runId),
      onEvent: (event) => this.onRunEvent(event),
      onRefused: (error) => {
        // Our chat.send was refused (busy, rate_limited, action_rejected, not_found, too_large...).
        if (error.code === "not_found") this.store.forgetConversation(); // stale or foreign id: retry starts a new one
        this.endLive();
        this.showError(error.message || "The message could not be sent.");
      },
      onUnavailable: () => {
        // The run cannot be replayed (resync) or is gone: the database is the truth now.
        this.endLive();
        this.reloadConversation();
      },
      onError: (error) => this.notice(error.message || "Something went wrong.", "error"),
      onConnectionState: (state, following) => this.view?.showReconnecting(state === "reconnecting" && following),
      onConnectionLost: () => {
        // The socket stopped retrying: end the turn visibly instead of spinning forever.
        this.finishPartial("interrupted");
        this.showError("Lost the connection to the server.");
      },
    };
  }

  onRunEvent(event) {
    if (!this.live) return;
    this.store.setConversation(event.conversation_id);
    const handler = EVENT_HANDLERS[event.type];
    if (handler) handler.call(this, event, this.live);
    this.view.scrollToEnd();
  }

  // ---- run end -----------------------------------------------------------------------------------

  /**
   * Remove the in-flight turn's element and stop following the run. Not a cancel: a run we
   * stop following still finishes on the server and is saved there.
   */
  endLive() {
    this.protocol.release();
    const live = this.live;
    this.live = null;
    if (live) {
      live.finish();
      live.el.remove();
    }
    this.view.setBusy(false);
    this.store.setRun(null);
  }

  finishComplete(payload) {
    const message = normalizeMessage({ ...payload, role: "assistant" });
    this.store.setConversation(payload.conversation_id);
    this.endLive();
    this.addAssistantMessage(message);
    if (message.custom_payload && payloadOpensPanel(message.custom_payload)) this.openPayload(message.custom_payload);
  }

  finishPartial(status) {
    const live = this.live;
    const message = normalizeMessage({ role: "assistant", content: live?.text ?? "", tool_history: live?.toolHistory ?? [], status });
    this.endLive();
    if (message.content.trim() || status === "cancelled") this.addAssistantMessage(message);
  }

  addAssistantMessage(message) {
    this.view.removeSuggestions();
    this.view.appendMessage(renderAssistantMessage(message, this, { latest: true }));
    this.store.addMessage(message);
    this.view.dispatch("reply", { message });
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
      if (err.status === 404) this.store.forgetConversation();
      if (!quiet) this.notice("Could not load that conversation.", "error");
      return false;
    }
    if (this.protocol.following || this.live) this.endLive();
    this.clearMessages();
    this.store.conversationId = data.id ?? id;
    const messages = (data.messages || []).filter((m) => m.role === "user" || m.role === "assistant");
    const tail = messages.at(-1);
    const liveRunId = tail?.role === "assistant" && tail.status === "streaming" ? tail.run_id || runId : null;
    if (liveRunId) messages.pop();
    messages.forEach((m, i) => {
      if (m.role === "user") {
        this.view.appendMessage(renderUserMessage(m.content ?? ""));
        this.store.addMessage({ role: "user", content: m.content ?? "" });
      } else {
        const message = normalizeMessage(m);
        this.view.appendMessage(renderAssistantMessage(message, this, { latest: i === messages.length - 1 }));
        this.store.addMessage(message);
      }
    });
    this.loaded = true;
    this.store.persist();
    this.showChat();
    this.view.scrollToEnd(true);
    // Without a placeholder message (older servers) a trailing user message means the same.
    const follow = liveRunId || (runId && this.store.lastRole === "user" ? runId : null);
    if (follow) this.attachRun(follow);
    return true;
  }

  reloadConversation() {
    if (this.store.conversationId !== null) return this.loadConversation(this.store.conversationId);
    return Promise.resolve(false);
  }

  /** Forget the conversation (and stop any run) and show the welcome state. */
  reset() {
    this.protocol.cancel();
    this.endLive();
    this.panel.close();
    this.clearMessages();
    this.store.lastRequest = null;
    this.store.forgetConversation();
  }

  newConversation() {
    this.reset();
    this.showChat();
    this.view.focusInput();
  }

  toggleConversations() {
    if (this.history.isOpen) this.showChat();
    else this.view.showHistory(this.history);
  }

  showChat() {
    this.view.showLog(this.history);
  }

  clearMessages() {
    this.view.clearMessages();
    this.store.clearMessages();
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
    if (!this.store.setPayloadOutcome(payload?.payload_id, outcome)) return;
    this.view.markPayloadOutcome(payload.payload_id, outcome);
    this.view.dispatch("payload-outcome", { payload, outcome });
  }

  // ---- small helpers -----------------------------------------------------------------------------

  showError(message) {
    this.view.showError(message, this.store.lastRequest ? () => this.retry() : null);
  }

  /** A transient note in the tray (copy confirmations, refused actions). */
  notice(text, kind = "info") {
    this.view.notice(text, kind);
  }
}

// Server event type -> handler; `this` is the tray. Lookup, not a switch, so adding an event
// type is one entry. Terminal events arrive after the protocol client has ended the run.
const EVENT_HANDLERS = {
  status(event, live) {
    live.setStatus(event.message);
  },
  text_delta(event, live) {
    live.appendText(event.text ?? "");
  },
  tool_start(event, live) {
    live.toolStart(event);
  },
  tool_progress(event, live) {
    live.toolProgress(event);
  },
  tool_complete(event, live) {
    live.toolComplete(event);
  },
  tool_approval(event, live) {
    live.approvalRequest(event);
  },
  complete(event) {
    this.finishComplete({ ...(event.payload || {}), conversation_id: event.payload?.conversation_id ?? event.conversation_id });
  },
  cancelled() {
    this.finishPartial("cancelled");
  },
  error(event) {
    this.finishPartial("error");
    this.showError(event.message || "Something went wrong.");
  },
};
