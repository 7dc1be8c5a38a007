/**
 * The turn in flight: starting a run (a send, a regenerate, an edit) or following one, stopping and retrying it,
 * its approvals, and how the tray answers the protocol client's callbacks until the run ends.
 * Methods of the tray (controller.js); `this` is the tray.
 */
import { getContext } from "../registry.js";
import { chatSendFrame } from "../protocol.js";
import { fieldLabels } from "../fields.js";
import { payloadOpensPanel } from "../panel.js";
import { normalizeMessage } from "../message-shape.js";
import { errorText, gettext, currentLanguage } from "../i18n.js";

export function turnsState() {
  return {
    live: null, // the in-flight turn's view
  };
}

export const turns = {
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
  },

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
  },

  /** Start a run for the last request: one chat.send frame with the page's context. */
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
      ...this.turnExtras(), // the tab's id, its frontend tools and its state (controller/tools.js)
    });
    this.beginLive();
    this.protocol.start(frame);
  },

  /** Follow a run we did not start in this page (after navigation, or opened from history). */
  attachRun(runId) {
    this.beginLive();
    this.store.setRun(runId);
    this.protocol.follow(runId);
  },

  cancel() {
    if (!this.protocol.following) return;
    this.live?.setStatus(gettext("Stopping…"));
    this.protocol.cancel();
  },

  beginLive() {
    this.live = this.render.liveTurn({
      approve: (id, ok) => this.protocol.approve(id, ok),
      copy: (text, btn) => this.copy(text, btn),
      labels: (tool) => fieldLabels(this.config, tool), // an approval from a server that sends no fields
    });
    this.view.appendMessage(this.live.el, { force: true });
    this.view.setBusy(true);
  },

  /** The browser went offline or came back. */
  onNetwork(online) {
    this.view.showOffline(!online);
    if (!online) this.live?.setStatus(gettext("Waiting for the network…"));
  },

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
  },

  onRunEvent(event) {
    if (!this.live) return;
    this.store.setConversation(event.conversation_id);
    const handler = EVENT_HANDLERS[event.type];
    if (handler) handler.call(this, event, this.live);
    this.view.contentChanged();
  },

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
  },

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
  },

  finishPartial(status) {
    const live = this.live;
    const message = normalizeMessage({ role: "assistant", content: live?.text ?? "", tool_history: live?.toolHistory ?? [], status });
    this.endLive();
    // a regenerate that failed before writing anything still shows its answer (empty, "incomplete") with the earlier
    // versions to page back to, as the conversation shows after a reload
    if (message.content.trim() || status === "cancelled" || (status === "error" && this.replacedVersions?.length)) this.addAssistantMessage(message);
  },

  /** Tell the page what a tool or a server action changed: one `pagechat:changed` per record (protocol: `changes`). */
  announceChanges(changes, source) {
    for (const change of Array.isArray(changes) ? changes : []) {
      if (change && typeof change.entity === "string") this.view.dispatch("changed", { ...change, ...source });
    }
  },

  /** Tell the page its data may have changed (a server action ran): demo pages reload their counts. */
  refreshPage(message) {
    this.view.dispatch("refresh", { message });
  },
};

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
  client_tool_call(event) {
    // the card is tool_start's; this tab runs the call only when it sent the turn (never a replayed one twice)
    this.runClientTool(event);
  },
  state(event) {
    this.applyRunState(event);
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
