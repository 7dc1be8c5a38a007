/**
 * The composer: sending a message (typed, a chip, a server action) and the unsent draft that survives a navigation.
 * Methods of the tray (controller.js); `this` is the tray.
 */
import { formatNumber, gettext, interpolate, ngettext } from "../i18n.js";

export const composer = {
  /** Put back what this user typed or uploaded and did not send; someone else's draft is dropped. */
  restoreDraft(draft) {
    const mine = draft.user === String(this.config.user ?? "");
    if (mine && draft.text) this.view.setComposerText(draft.text);
    if (mine && draft.files.length) {
      this.pending = draft.files.map((data) => ({ key: `restored-${data.id}`, name: data.name, status: "ready", data, preview: null }));
      this.showPending();
    }
    if (!mine && (draft.text || draft.files.length)) this.saveDraft(); // someone else's: dropped from storage too
  },

  /** Store the composer's unsent text and uploaded files (not an edit of the last question: that is not new text). */
  saveDraft() {
    const files = this.pending.filter((p) => p.status === "ready").map((p) => p.data);
    // while an edit fills the composer, the draft is what it held before (the edit's words are not new text)
    this.store.setDraft(String(this.config.user ?? ""), this.editing ? this.draftBeforeEdit : this.view.input.value, files);
  },

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
    if (globalThis.navigator?.onLine === false) {
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
    this.view.appendMessage(this.render.userMessage(text, this, attachments, interactionType), { force: true });
    this.store.addMessage({ role: "user", content: text, attachments, interaction_type: interactionType });
    this.store.lastRequest = { message: text, interactionType, actionMetadata, attachments: attachments.map((a) => a.id) };
    this.saveDraft(); // sent: no longer a draft (a chip's message leaves the composer's own text as it is)
    this.startRun();
    return true;
  },
};
