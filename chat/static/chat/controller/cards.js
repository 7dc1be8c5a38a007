/**
 * An answer's card in the panel and the proposal it may carry: opening it, accepting it through the answer's
 * server action, rejecting or discarding it; the decision is kept with the message (it survives reloads).
 * Methods of the tray (controller.js); `this` is the tray.
 */
import { showDiagnostics, showPayload } from "../panel.js";
import { runSuggestedAction } from "../actions.js";
import { acceptingAction } from "../proposals.js";
import { gettext } from "../i18n.js";

export const cards = {
  /** Show a payload in the panel; `focus` false for one that opens by itself (it leaves the focus where it is). */
  openPayload(payload, { focus = true } = {}) {
    showPayload(this.panel, payload, this, { focus });
  },

  openDiagnostics(diagnostics) {
    showDiagnostics(this.panel, diagnostics);
  },

  /**
   * The server action of the latest answer that applies this proposal (the card's own primary button where the page
   * gives it no Accept), or null: the proposal is decided already, or it is not the latest answer's (its buttons are gone).
   */
  proposalAction(payload) {
    const latest = [...this.store.messages].reverse().find((m) => m.role === "assistant");
    if (!payload || latest?.custom_payload?.payload_id !== payload.payload_id || this.store.payloadOutcome(payload.payload_id)) return null;
    return acceptingAction(latest);
  },

  /** The card's Accept through the answer's server action: sent as its button is, and the proposal is decided (one path). */
  acceptWith(action, payload) {
    if (this.protocol.following) {
      this.notice(gettext("Please wait for the current reply, or stop it first."), "error");
      return;
    }
    this.markPayload(payload, "accepted", { stepAside: false }); // the answer to the action follows in the tray
    runSuggestedAction(action, this);
  },

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
  },

  /** The Cancel action: the proposal on screen is discarded (marked rejected); the conversation stays. */
  discardProposal() {
    const message = [...this.store.messages].reverse().find((m) => m.role === "assistant" && m.custom_payload);
    this.panel.close();
    if (message && !this.store.payloadOutcome(message.custom_payload.payload_id)) this.markPayload(message.custom_payload, "rejected");
    this.notice(gettext("Proposal discarded. The conversation is kept."));
    this.view.focusInput();
  },
};
