/**
 * Editing the last question: it goes back into the composer; sending it replaces the question and its answer.
 * Methods of the tray (controller.js); `this` is the tray.
 */

export function editingState() {
  return {
    editing: false, // the composer holds an edit of the last question
    draftBeforeEdit: "", // what the composer held when the edit began (Cancel and Escape put it back)
  };
}

export const editing = {
  /** Put the last question into the composer for editing; sending it replaces the question and its answer. */
  beginEdit(text) {
    if (this.protocol.following) return;
    if (!this.editing) this.draftBeforeEdit = this.view.input.value; // Cancel puts it back, exactly
    this.editing = true;
    this.view.showEditing(true, text);
    this.saveDraft();
  },

  /** The last question into the composer for editing (Up in an empty composer); false when there is none to edit. */
  editLastQuestion() {
    if (this.protocol.following || this.editing || this.store.conversationId === null) return false;
    const question = [...this.store.messages].reverse().find((m) => m.role === "user");
    // only typed words can be edited: a chip or a button click (value_selected, action_executed) is not text to rewrite
    if (!question?.content || (question.interaction_type || "text_input") !== "text_input") return false;
    this.beginEdit(question.content);
    return true;
  },

  /** Leave the edit (Cancel, Escape, or once it is sent): the composer holds again exactly what it held before. */
  cancelEdit() {
    if (!this.editing) return;
    this.editing = false;
    this.view.showEditing(false);
    this.view.setComposerText(this.draftBeforeEdit ?? "");
    this.draftBeforeEdit = "";
    this.saveDraft();
    if (this.isOpen) this.view.focusInput(); // the Cancel edit button is gone: focus stays in the message box
  },

  /** Send the edited question: the last question and its answer go, the new question is asked in their place. */
  editLast(text) {
    this.cancelEdit();
    if (this.store.conversationId === null) return this.send(text);
    this.view.clearError();
    this.view.removeSuggestions();
    this.dropTrailing("assistant");
    this.dropTrailing("user");
    const attachments = this.pending.every((p) => p.status === "ready") ? this.takePending() : [];
    this.view.appendMessage(this.render.userMessage(text, this, attachments, "text_input"), { force: true });
    this.store.addMessage({ role: "user", content: text, attachments, interaction_type: "text_input" });
    this.store.lastRequest = { message: text, interactionType: "text_input", actionMetadata: null, replaceLast: "question",
      attachments: attachments.map((a) => a.id) };
    this.startRun();
    return true;
  },

  /** Remove the last message if it is of `role` (a failed turn may have left no answer to remove). */
  dropTrailing(role) {
    if (this.store.lastRole !== role) return;
    const index = this.store.messages.length - 1;
    this.store.messages.splice(index);
    const els = [...this.view.log.querySelectorAll(`.chat-msg--${role}:not(.chat-msg--live)`)];
    els.at(-1)?.remove();
  },
};
