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
import { fieldLabels } from "./fields.js";
import { HistoryView } from "./history.js";
import { payloadOpensPanel, showDiagnostics, showPayload } from "./panel.js";
import { runSuggestedAction } from "./actions.js";
import { acceptingAction } from "./proposals.js";
import { normalizeMessage, renderAssistantMessage, renderUserMessage } from "./messages.js";
import { TrayView } from "./view.js";
import { copyText } from "./dom.js";
import { formatNumber, gettext, interpolate, ngettext, pageLanguage, errorText, setLanguage, currentLanguage } from "./i18n.js";

// A conversation is read a part at a time: its latest messages when it opens, older ones when the reader asks.
const PAGE_MESSAGES = 50;

/** The stored messages the tray shows: a standard client's answers to its own tool calls (interaction_type
 * "tool_result") are not something the user typed. */
function shownMessages(messages) {
  return (messages || []).filter((m) => (m.role === "user" && m.interaction_type !== "tool_result") || m.role === "assistant");
}

/** An answer as one of a later answer's earlier versions (the REST shape of `earlier_versions` items). */
function versionOf(message) {
  const { id, content, message_html, tool_history, stop_reason } = message;
  return { id, content, message_html, tool_history, stop_reason };
}

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
    this.earliestId = null; // the first stored message shown, while earlier ones exist to read
    this.loadingEarlier = false;
    setLanguage(pageLanguage(config)); // dates and numbers in the page's language
    this.view = new TrayView(root, config, {
      toggle: () => this.toggle(),
      close: () => this.close(),
      submit: (text) => this.send(text, "text_input"),
      startWith: (text) => this.send(text, "text_input"), // a welcome starter: sent as if typed
      stop: () => this.cancel(),
      newChat: () => this.newConversation(),
      toggleHistory: () => this.toggleConversations(),
      cancelEdit: () => this.cancelEdit(),
      editLastQuestion: () => this.editLastQuestion(),
      attach: (files) => this.attach(files),
      draftChanged: () => this.saveDraft(),
      loadEarlier: () => this.loadEarlier(),
    });
    this.pending = []; // files chosen for the next message: {key, name, status: "uploading"|"ready", data, preview}
    this.editing = false; // the composer holds an edit of the last question
    this.draftBeforeEdit = ""; // what the composer held when the edit began (Cancel and Escape put it back)
    this.replacedVersions = null; // a regenerate's replaced answer and its versions, for the answer that replaces it
    this.replacedAnswer = null; // that answer itself, put back if the server refuses the regenerate (it replaced nothing)
    // The browser's own view of the network: warn at once instead of "Thinking…" for 30 s.
    window.addEventListener("offline", () => this.onNetwork(false));
    window.addEventListener("online", () => this.onNetwork(true));
    if (navigator.onLine === false) this.onNetwork(false);
    this.history = new HistoryView(this);
    this.view.mountHistory(this.history.el);
    this.panel = this.view.panel;
  }

  /** Pick up the tab's conversation (and a run still streaming) after a page navigation. */
  start() {
    const { open, draft } = this.store.restore();
    // what was typed or uploaded and not sent comes back after a navigation or a reload of the tab, to its writer only
    const mine = draft.user === String(this.config.user ?? "");
    if (mine && draft.text) this.view.setComposerText(draft.text);
    if (mine && draft.files.length) {
      this.pending = draft.files.map((data) => ({ key: `restored-${data.id}`, name: data.name, status: "ready", data, preview: null }));
      this.showPending();
    }
    if (!mine && (draft.text || draft.files.length)) this.saveDraft(); // someone else's: dropped from storage too
    if (open) this.open({ focus: false }); // reopen after navigation without stealing focus
  }

  /** Store the composer's unsent text and uploaded files (not an edit of the last question: that is not new text). */
  saveDraft() {
    const files = this.pending.filter((p) => p.status === "ready").map((p) => p.data);
    // while an edit fills the composer, the draft is what it held before (the edit's words are not new text)
    this.store.setDraft(String(this.config.user ?? ""), this.editing ? this.draftBeforeEdit : this.view.input.value, files);
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
    const withFiles = interactionType === "text_input" && this.pending.length > 0;
    if (!text && !withFiles) return false;
    if (withFiles && this.pending.some((p) => p.status !== "ready")) {
      this.notice(gettext("Please wait until the files have finished uploading."), "error");
      return false;
    }
    if (this.protocol.following) {
      this.notice(gettext("Please wait for the current reply, or stop it first."), "error");
      return false;
    }
    const max = this.config.max_message_chars;
    if (max && text.length > max) {
      this.notice(interpolate(ngettext("This message is %(over)s character too long (the limit is %(max)s).", "This message is %(over)s characters too long (the limit is %(max)s).", text.length - max), { over: formatNumber(text.length - max), max: formatNumber(max) }), "error");
      return false;
    }
    if (navigator.onLine === false) {
      this.notice(gettext("You are offline: the message was not sent."), "error");
      return false;
    }
    if (this.editing && interactionType === "text_input") return this.editLast(text);
    if (this.editing) this.cancelEdit();
    if (!this.isOpen) this.open();
    if (this.loading) {
      this.loading.then(() => this.send(message, interactionType, actionMetadata));
      return true;
    }
    this.showChat();
    this.view.clearError();
    this.view.removeSuggestions();
    this.replacedVersions = null; // a new question: its answer replaces nothing
    this.replacedAnswer = null;
    const attachments = withFiles ? this.takePending() : [];
    this.view.appendMessage(renderUserMessage(text, this, attachments, interactionType), { force: true });
    this.store.addMessage({ role: "user", content: text, attachments, interaction_type: interactionType });
    this.store.lastRequest = { message: text, interactionType, actionMetadata, attachments: attachments.map((a) => a.id) };
    this.saveDraft(); // sent: no longer a draft (a chip's message leaves the composer's own text as it is)
    this.startRun();
    return true;
  }

  // ---- attachments -------------------------------------------------------------------------------

  /** Upload files for the next message; what the server would refuse is refused here first, with the reason. */
  attach(files) {
    const limits = this.config.attachments;
    if (!limits) return;
    for (const file of files) {
      const name = String(file.name || "pasted image");
      if (this.pending.length >= limits.max_count) {
        this.notice(interpolate(ngettext("A message can carry at most %(count)s file.", "A message can carry at most %(count)s files.", limits.max_count), { count: formatNumber(limits.max_count) }), "error");
        break;
      }
      if (!limits.types.includes(file.type)) {
        this.notice(interpolate(gettext("%(name)s: only images (PNG, JPEG, WebP, GIF) and PDF files can be attached."), { name }), "error");
        continue;
      }
      if (file.size > limits.max_bytes) {
        this.notice(interpolate(gettext("%(name)s is too big: the limit is %(size)s."), { name, size: formatSize(limits.max_bytes) }), "error");
        continue;
      }
      const item = { key: `${Date.now()}-${Math.random()}`, name, status: "uploading", data: null, preview: null };
      this.pending.push(item);
      this.upload(item, file);
    }
    this.showPending();
  }

  async upload(item, file) {
    try {
      item.data = await this.api.uploadAttachment(file);
      item.status = "ready";
    } catch (err) {
      this.pending = this.pending.filter((p) => p !== item);
      this.notice(`${item.name}: ${err.message}`, "error");
    }
    if (item.status === "ready" && !this.pending.includes(item)) this.discard(item); // removed while it uploaded
    this.showPending();
  }

  removeAttachment(item) {
    this.pending = this.pending.filter((p) => p !== item);
    if (item.status === "ready") this.discard(item);
    this.showPending();
  }

  discard(item) {
    this.api.discardAttachment(item.data.id).catch(() => {}); // unsent leftovers are purged anyway
  }

  showPending() {
    this.view.showPending(this.pending, (item) => this.removeAttachment(item));
    this.saveDraft();
  }

  /** The uploaded files' descriptions, now part of the message being sent; the composer's list empties. */
  takePending() {
    const files = this.pending.map((p) => p.data);
    this.pending = [];
    this.showPending();
    return files;
  }

  // ---- per-message actions -----------------------------------------------------------------------

  /** Copy text (an answer, a code block) to the clipboard; `button` briefly shows it worked. */
  async copy(text, button = null) {
    const ok = await copyText(String(text ?? ""));
    this.notice(ok ? gettext("Copied to clipboard.") : gettext("Could not copy to the clipboard."), ok ? "info" : "error");
    if (ok && button) {
      button.classList.add("is-copied");
      setTimeout(() => button.classList.remove("is-copied"), 1500);
    }
  }

  /** A new run answers the last question again; its answer replaces the last one (the question is not repeated). */
  regenerate() {
    if (this.protocol.following || this.store.conversationId === null) return false;
    const question = [...this.store.messages].reverse().find((m) => m.role === "user");
    if (!question) return false;
    this.view.clearError();
    this.view.removeSuggestions();
    // the server keeps the answer being replaced as an earlier version of the next one: so does the tray
    const old = this.store.lastRole === "assistant" ? this.store.messages.at(-1) : null;
    // an answer that says nothing (a failed one) is not a version, as on the server (selectors.conversation_messages)
    const says = old && (old.content || old.tool_history?.length);
    this.replacedVersions = old ? [...(old.earlier_versions || []), ...(says ? [versionOf(old)] : [])] : [];
    this.replacedAnswer = old;
    this.dropTrailing("assistant");
    this.store.lastRequest = { message: question.content, interactionType: "text_input", actionMetadata: null, replaceLast: "answer" };
    this.startRun();
    return true;
  }

  /** Ask for the rest of an answer cut at a limit: the message "Continue", as a suggested reply is sent (no files). */
  continueAnswer() {
    return this.send(gettext("Continue"), "value_selected");
  }

  /** Put the last question into the composer for editing; sending it replaces the question and its answer. */
  beginEdit(text) {
    if (this.protocol.following) return;
    if (!this.editing) this.draftBeforeEdit = this.view.input.value; // Cancel puts it back, exactly
    this.editing = true;
    this.view.showEditing(true, text);
    this.saveDraft();
  }

  /** The last question into the composer for editing (Up in an empty composer); false when there is none to edit. */
  editLastQuestion() {
    if (this.protocol.following || this.editing || this.store.conversationId === null) return false;
    const question = [...this.store.messages].reverse().find((m) => m.role === "user");
    // only typed words can be edited: a chip or a button click (value_selected, action_executed) is not text to rewrite
    if (!question?.content || (question.interaction_type || "text_input") !== "text_input") return false;
    this.beginEdit(question.content);
    return true;
  }

  /** Leave the edit (Cancel, Escape, or once it is sent): the composer holds again exactly what it held before. */
  cancelEdit() {
    if (!this.editing) return;
    this.editing = false;
    this.view.showEditing(false);
    this.view.setComposerText(this.draftBeforeEdit ?? "");
    this.draftBeforeEdit = "";
    this.saveDraft();
    if (this.isOpen) this.view.focusInput(); // the Cancel edit button is gone: focus stays in the message box
  }

  editLast(text) {
    this.cancelEdit();
    if (this.store.conversationId === null) return this.send(text);
    this.view.clearError();
    this.view.removeSuggestions();
    this.dropTrailing("assistant");
    this.dropTrailing("user");
    const attachments = this.pending.every((p) => p.status === "ready") ? this.takePending() : [];
    this.view.appendMessage(renderUserMessage(text, this, attachments, "text_input"), { force: true });
    this.store.addMessage({ role: "user", content: text, attachments, interaction_type: "text_input" });
    this.store.lastRequest = { message: text, interactionType: "text_input", actionMetadata: null, replaceLast: "question",
      attachments: attachments.map((a) => a.id) };
    this.startRun();
    return true;
  }

  /** Remove the last message if it is of `role` (a failed turn may have left no answer to remove). */
  dropTrailing(role) {
    if (this.store.lastRole !== role) return;
    const index = this.store.messages.length - 1;
    this.store.messages.splice(index);
    const els = [...this.view.log.querySelectorAll(`.chat-msg--${role}:not(.chat-msg--live)`)];
    els.at(-1)?.remove();
  }

  /** Good/bad feedback on an answer, stored on the message; a second click on the same verdict clears it. */
  async feedback(message, rating, bar) {
    if (message.id === null || message.id === undefined) return;
    const value = message.feedback === rating ? "" : rating;
    try {
      await this.api.markMessage(message.id, { feedback: value });
    } catch {
      this.notice(gettext("Could not save your feedback."), "error");
      return;
    }
    message.feedback = value;
    for (const btn of bar.querySelectorAll(".chat-feedback")) {
      btn.setAttribute("aria-pressed", String(btn.classList.contains(`chat-feedback--${value}`)));
    }
    this.view.showFeedbackComment(bar, value ? message : null, async (comment) => {
      try {
        await this.api.markMessage(message.id, { feedback_comment: comment });
        message.feedback_comment = comment;
        this.notice(gettext("Thanks for your feedback."));
      } catch {
        this.notice(gettext("Could not save your comment."), "error");
      }
    });
  }

  /** The Cancel action: the proposal on screen is discarded (marked rejected); the conversation stays. */
  discardProposal() {
    const message = [...this.store.messages].reverse().find((m) => m.role === "assistant" && m.custom_payload);
    this.panel.close();
    if (message && !this.store.payloadOutcome(message.custom_payload.payload_id)) this.markPayload(message.custom_payload, "rejected");
    this.notice(gettext("Proposal discarded. The conversation is kept."));
    this.view.focusInput();
  }

  /** The browser went offline or came back. */
  onNetwork(online) {
    this.view.showOffline(!online);
    if (!online) this.live?.setStatus(gettext("Waiting for the network…"));
  }

  /** Tell the page its data may have changed (a server action ran): demo pages reload their counts. */
  refreshPage(message) {
    this.view.dispatch("refresh", { message });
  }

  /** Re-send the last request with a NEW client_message_id (it is a new attempt, not a resend). */
  retry() {
    if (!this.store.lastRequest || this.protocol.following) return;
    this.view.clearError();
    if (this.store.lastRequest.lost) {
      this.retryLost();
      return;
    }
    // a regenerate again: the answer shown now (the failed one, or the one put back) is what it replaces
    if (this.store.lastRequest.replaceLast === "answer" && this.regenerate()) return;
    this.startRun();
  }

  /**
   * Retry after the connection was lost mid-turn. A run the server acknowledged is read back from the conversation:
   * it may have finished meanwhile, or it is still going and is followed from its first event. A send never
   * acknowledged goes again as it was: its client_message_id makes the server run it at most once.
   */
  async retryLost() {
    const { lost, ...request } = this.store.lastRequest;
    this.store.lastRequest = request;
    if (!lost.runId) {
      this.beginLive();
      this.protocol.start(lost.frame);
      return;
    }
    this.store.seenSeq.delete(lost.runId); // the view is rebuilt: a run still going is replayed from its start
    const id = this.store.conversationId;
    if (id === null || !(await this.loadConversation(id, { quiet: true }))) {
      this.store.lastRequest = { ...request, lost };
      this.showError(gettext("Lost the connection to the server."));
    }
  }

  startRun() {
    const { message, interactionType, actionMetadata, replaceLast = null, attachments = null } = this.store.lastRequest;
    const frame = chatSendFrame({
      message: replaceLast === "answer" ? "" : message, // a regenerate does not send the question again
      conversationId: this.store.conversationId,
      context: { ...(this.config.context || {}), ...getContext(), current_page: this.config.page },
      interactionType,
      actionMetadata,
      replaceLast,
      attachments,
      language: currentLanguage(),
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
    this.live?.setStatus(gettext("Stopping…"));
    this.protocol.cancel();
  }

  beginLive() {
    this.live = new LiveTurn({
      approve: (id, ok) => this.protocol.approve(id, ok),
      copy: (text, btn) => this.copy(text, btn),
      labels: (tool) => fieldLabels(this.config, tool), // an approval from a server that sends no fields
    });
    this.view.appendMessage(this.live.el, { force: true });
    this.view.setBusy(true);
  }

  // ---- the protocol client's callbacks -------------------------------------------------------------

  protocolHooks() {
    return {
      onAck: (run) => {
        this.store.setRun(run.runId);
        // the message is stored with its files: a retry (a new message) must not claim them again
        if (this.store.lastRequest?.attachments) this.store.lastRequest.attachments = null;
      },
      onEvent: (event) => this.onRunEvent(event),
      onRefused: (error) => {
        // Our chat.send was refused (busy, rate_limited, action_rejected, not_found, too_large...).
        if (error.code === "not_found") this.store.forgetConversation(); // stale or foreign id: retry starts a new one
        this.endLive();
        // a refused regenerate replaced nothing: the answer it took off the screen comes back, with its versions
        if (this.store.lastRequest?.replaceLast === "answer" && this.replacedAnswer) {
          this.replacedVersions = null;
          this.addAssistantMessage(this.replacedAnswer);
        }
        this.showError(errorText(error) || gettext("The message could not be sent."));
      },
      onUnavailable: () => {
        // The run cannot be replayed (resync) or is gone: the database is the truth now.
        this.endLive();
        this.reloadConversation();
      },
      onError: (error) => this.notice(errorText(error) || gettext("Something went wrong."), "error"),
      onConnectionState: (state, following) => this.view?.showReconnecting(state === "reconnecting" && following),
      onConnectionLost: (run) => {
        // The socket stopped retrying: end the turn visibly instead of spinning forever.
        this.finishPartial("interrupted");
        // Retry then asks the server what became of the message instead of sending it twice (see retry)
        if (this.store.lastRequest && run) this.store.lastRequest = { ...this.store.lastRequest, lost: { runId: run.runId, frame: run.frame } };
        this.showError(gettext("Lost the connection to the server."));
      },
    };
  }

  onRunEvent(event) {
    if (!this.live) return;
    this.store.setConversation(event.conversation_id);
    const handler = EVENT_HANDLERS[event.type];
    if (handler) handler.call(this, event, this.live);
    this.view.contentChanged();
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
    const request = this.store.lastRequest;
    this.endLive();
    this.addAssistantMessage(message);
    // a card that opens by itself never takes the focus (nor what the person is typing meanwhile)
    if (message.custom_payload && payloadOpensPanel(message.custom_payload)) this.openPayload(message.custom_payload, { focus: false });
    // A server action's outcome (protocol: complete.payload.action_result): pages refresh what it changed.
    const result = payload.action_result;
    if (result && typeof result.action === "string") {
      this.view.dispatch("action-result", { result: { ...result }, message });
      if (result.status === "succeeded") this.announceChanges(result.changes, { action: result.action });
      if (result.status === "succeeded" && result.refresh) this.view.dispatch("refresh", { action: result.action, message });
    } else if (request?.interactionType === "action_executed") {
      this.refreshPage(message); // a server without action_result: any server action may have changed the page
    }
  }

  finishPartial(status) {
    const live = this.live;
    const message = normalizeMessage({ role: "assistant", content: live?.text ?? "", tool_history: live?.toolHistory ?? [], status });
    this.endLive();
    // a regenerate that failed before writing anything still shows its answer (empty, "incomplete") with the earlier
    // versions to page back to, as the conversation shows after a reload
    if (message.content.trim() || status === "cancelled" || (status === "error" && this.replacedVersions?.length)) this.addAssistantMessage(message);
  }

  addAssistantMessage(message) {
    if (this.replacedVersions?.length && !message.earlier_versions.length) message.earlier_versions = this.replacedVersions;
    this.replacedVersions = null;
    this.replacedAnswer = null;
    this.view.removeSuggestions();
    this.view.appendMessage(renderAssistantMessage(message, this, { latest: true }));
    this.store.addMessage(message);
    this.view.refreshLatestActions();
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
    this.showChat();
    this.view.refreshLatestActions();
    this.view.scrollToEnd(true);
    // Without a placeholder message (older servers) a trailing user message means the same.
    const follow = liveRunId || (runId && this.store.lastRole === "user" ? runId : null);
    if (follow) this.attachRun(follow);
    return true;
  }

  /** A stored message as shown (its element) and as kept in the store (its entry). */
  storedMessage(m, latest) {
    if (m.role === "user") {
      const typed = m.interaction_type || "text_input";
      return { el: renderUserMessage(m.content ?? "", this, m.attachments, typed),
        entry: { role: "user", content: m.content ?? "", attachments: m.attachments || [], interaction_type: typed } };
    }
    const message = normalizeMessage(m);
    // the outcome is stored with the message: the proposal shows as decided after a reload
    if (message.payload_outcome && message.custom_payload) this.store.setPayloadOutcome(message.custom_payload.payload_id, message.payload_outcome);
    return { el: renderAssistantMessage(message, this, { latest }), entry: message };
  }

  /** After a part of the conversation was read: where "Show earlier messages" reads on from, and whether it is offered. */
  earlierFrom(data) {
    this.earliestId = data.messages?.[0]?.id ?? null;
    this.view.showEarlier(Boolean(data.has_earlier) && this.earliestId !== null);
  }

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
    this.earliestId = null;
    this.replacedVersions = null; // they belonged to an answer of the conversation shown until now
    this.replacedAnswer = null;
  }

  // ---- panels ----------------------------------------------------------------------------------------

  /** Show a payload in the panel; `focus` false for one that opens by itself (it leaves the focus where it is). */
  openPayload(payload, { focus = true } = {}) {
    showPayload(this.panel, payload, this, { focus });
  }

  /**
   * The server action of the latest answer that applies this proposal (the card's own primary button where the page
   * gives it no Accept), or null: the proposal is decided already, or it is not the latest answer's (its buttons are gone).
   */
  proposalAction(payload) {
    const latest = [...this.store.messages].reverse().find((m) => m.role === "assistant");
    if (!payload || latest?.custom_payload?.payload_id !== payload.payload_id || this.store.payloadOutcome(payload.payload_id)) return null;
    return acceptingAction(latest);
  }

  /** The card's Accept through the answer's server action: sent as its button is, and the proposal is decided (one path). */
  acceptWith(action, payload) {
    if (this.protocol.following) {
      this.notice(gettext("Please wait for the current reply, or stop it first."), "error");
      return;
    }
    this.markPayload(payload, "accepted", { stepAside: false }); // the answer to the action follows in the tray
    runSuggestedAction(action, this);
  }

  /** Tell the page what a tool or a server action changed: one `pagechat:changed` per record (protocol: `changes`). */
  announceChanges(changes, source) {
    for (const change of Array.isArray(changes) ? changes : []) {
      if (change && typeof change.entity === "string") this.view.dispatch("changed", { ...change, ...source });
    }
  }

  openDiagnostics(diagnostics) {
    showDiagnostics(this.panel, diagnostics);
  }

  /**
   * Remember Accept/Reject: the message's tag says what happened, its actions are disabled, and
   * the outcome is stored with the message (so it survives navigation and reloads).
   */
  markPayload(payload, outcome, { stepAside = true } = {}) {
    if (!this.store.setPayloadOutcome(payload?.payload_id, outcome)) return;
    this.view.markPayloadOutcome(payload.payload_id, outcome);
    this.view.dispatch("payload-outcome", { payload, outcome });
    const message = this.store.messages.find((m) => m.role === "assistant" && m.custom_payload?.payload_id === payload.payload_id);
    if (message?.id !== null && message?.id !== undefined) {
      this.api.markMessage(message.id, { payload_outcome: outcome }).catch(() => this.notice(gettext("Could not save that decision."), "error"));
    }
    // Accept may fill a form on the page: on a phone the sheet steps aside so the form is visible.
    if (outcome === "accepted" && stepAside) this.view.stepAside();
  }

  /** Rename a conversation (the tray's conversation list). */
  async renameConversation(id, title) {
    try {
      return await this.api.renameConversation(id, title);
    } catch {
      this.notice(gettext("Could not rename that conversation."), "error");
      return null;
    }
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
    this.announceChanges(event.changes, { tool: event.tool }); // at once: the page need not wait for the answer's end
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
    // the run had started, so its question is stored: Retry answers it again (a regenerate), never sends it twice
    if (this.store.lastRequest) this.store.lastRequest = { ...this.store.lastRequest, replaceLast: "answer" };
    this.showError(errorText(event) || gettext("Something went wrong."));
  },
};

/** "5 MB", "300 KB": a byte count for people. */
function formatSize(bytes) {
  return bytes >= 1024 * 1024 ? `${formatNumber(Math.round(bytes / (1024 * 1024)))} MB` : `${formatNumber(Math.max(1, Math.round(bytes / 1024)))} KB`;
}
