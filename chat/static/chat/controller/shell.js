/**
 * The tray's window: opening (which loads the conversation the first time), closing, and the notes and errors it shows.
 * Methods of the tray (controller.js); `this` is the tray.
 */

export const shell = {
  open({ focus = true } = {}) {
    this.view.showOpen({ focus });
    this.store.setOpen(true);
    this.ensureLoaded();
  },

  close() {
    this.view.showClosed();
    this.store.setOpen(false);
  },

  toggle() {
    if (this.isOpen) this.close();
    else this.open();
  },

  /** An error under the conversation, with Retry when there is a request to retry. */
  showError(message) {
    this.view.showError(message, this.store.lastRequest ? () => this.retry() : null);
  },

  /** A transient note in the tray (copy confirmations, refused actions). */
  notice(text, kind = "info") {
    this.view.notice(text, kind);
  },
};
