/**
 * What the reader does with an answer: copy it, regenerate it (the answer it replaces becomes an earlier version),
 * ask for the rest of a cut one, rate it; and adding a finished answer to the conversation.
 * Methods of the tray (controller.js); `this` is the tray.
 */
import { copyText } from "../dom.js";
import { gettext } from "../i18n.js";
import { versionOf } from "../message-shape.js";

export function answersState() {
  return {
    replacedVersions: null, // a regenerate's replaced answer and its versions, for the answer that replaces it
    replacedAnswer: null, // that answer itself, put back if the server refuses the regenerate (it replaced nothing)
  };
}

export const answers = {
  /** Copy text (an answer, a code block) to the clipboard; `button` briefly shows it worked. */
  async copy(text, button = null) {
    const ok = await copyText(String(text ?? ""));
    this.notice(ok ? gettext("Copied to clipboard.") : gettext("Could not copy to the clipboard."), ok ? "info" : "error");
    if (ok && button) {
      button.classList.add("is-copied");
      setTimeout(() => button.classList.remove("is-copied"), 1500);
    }
  },

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
  },

  /** Ask for the rest of an answer cut at a limit: the message "Continue", as a suggested reply is sent (no files). */
  continueAnswer() {
    return this.send(gettext("Continue"), "value_selected");
  },

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
  },

  /** A finished answer into the conversation: after the answers it replaced (a regenerate's), as the latest one. */
  addAssistantMessage(message) {
    if (this.replacedVersions?.length && !message.earlier_versions.length) message.earlier_versions = this.replacedVersions;
    this.replacedVersions = null;
    this.replacedAnswer = null;
    this.view.removeSuggestions();
    this.view.appendMessage(this.render.assistantMessage(message, this, { latest: true }));
    this.store.addMessage(message);
    this.view.refreshLatestActions();
    this.view.dispatch("reply", { message });
  },
};
