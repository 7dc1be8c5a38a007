/**
 * The tray's frame: launcher, header, conversation log, composer, connection banner, notices
 * and errors, plus the floating panel beside it. Only presentation: every user intent goes to
 * the controller through `actions`; messages (messages.js), the live turn (live.js), the panel
 * content (panel.js) and the conversation list (history.js) render themselves.
 */
import { h, button, icon, ICONS } from "./dom.js";
import { FloatingPanel } from "./panel.js";

const NOTICE_MS = 4000;
const INPUT_MAX_PX = 160;

export class TrayView {
  /**
   * @param {HTMLElement} root  the [data-chat-tray] element
   * @param {object} config  the tray config (page, user, offline)
   * @param {{toggle(), close(), submit(text), stop(), newChat(), toggleHistory()}} actions
   */
  constructor(root, config, actions) {
    this.root = root;
    this.actions = actions;
    const pageLabel = String(config.page || "this page").replaceAll("_", " ");
    this.launcher = h(
      "button",
      { type: "button", class: "chat-launcher", "aria-label": "Open chat", "aria-expanded": "false", "aria-controls": "chat-tray-panel", onclick: () => actions.toggle() },
      icon(ICONS.chat, "chat-icon chat-launcher__icon"),
      h("span", { class: "chat-launcher__label" }, "Chat"),
    );
    this.listButton = button("History", () => actions.toggleHistory(), { cls: "chat-header-btn", title: "Your conversations" });
    this.listButton.setAttribute("aria-pressed", "false");
    const header = h(
      "header",
      { class: "chat-tray__header" },
      h(
        "div",
        { class: "chat-tray__heading" },
        h("h2", { class: "chat-tray__title", id: "chat-tray-title" }, "Assistant"),
        config.offline ? h("span", { class: "chat-badge chat-badge--offline", title: "Offline demo model — no API key configured" }, "offline model") : null,
      ),
      h(
        "div",
        { class: "chat-tray__header-actions" },
        this.listButton,
        button("New chat", () => actions.newChat(), { cls: "chat-header-btn chat-new-btn" }),
        button("×", () => actions.close(), { cls: "chat-icon-btn", ariaLabel: "Close chat" }),
      ),
    );
    this.connectionEl = h("div", { class: "chat-connection", role: "status", hidden: true });
    this.welcome = h(
      "div",
      { class: "chat-welcome" },
      h("p", { class: "chat-welcome__title" }, `Hi${config.user ? ` ${config.user}` : ""}! How can I help?`),
      h("p", { class: "chat-muted" }, `I can see you are on the ${pageLabel} page and can help with what is on it.`),
      config.offline ? h("p", { class: "chat-offline-note" }, "Offline demo model — no API key configured") : null,
    );
    this.log = h("div", { class: "chat-log", role: "log", "aria-live": "polite", "aria-label": "Conversation" }, this.welcome);
    this.historySlot = h("div", { class: "chat-history-slot" });
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
    this.stopButton = button("Stop", () => actions.stop(), { cls: "chat-btn chat-btn--warning chat-stop-btn", ariaLabel: "Stop generating" });
    this.stopButton.hidden = true;
    const composer = h("form", { class: "chat-composer" }, this.input, this.sendButton, this.stopButton);
    composer.addEventListener("submit", (e) => {
      e.preventDefault();
      this.submit();
    });

    this.panelEl = h(
      "aside",
      { class: "chat-tray", id: "chat-tray-panel", "aria-labelledby": "chat-tray-title", hidden: true },
      header,
      this.connectionEl,
      this.historySlot,
      this.log,
      this.noticeEl,
      composer,
    );
    root.replaceChildren(this.launcher, this.panelEl);
    this.panel = new FloatingPanel(root);
    // Escape closes the panel, then the tray - when focus is in the tray or nowhere in
    // particular, so a page's own dialogs keep their Escape.
    document.addEventListener("keydown", (e) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      const focus = document.activeElement;
      if (focus && focus !== document.body && !root.contains(focus)) return;
      if (this.panel.isOpen) this.panel.close();
      else if (this.isOpen) actions.close();
      else return;
      e.preventDefault();
    });
  }

  /** Put the conversation list (history.js) in its place above the log. */
  mountHistory(el) {
    this.historySlot.replaceWith(el);
    this.historySlot = el;
  }

  submit() {
    const text = this.input.value;
    if (!text.trim() || this.busy) return;
    this.input.value = "";
    this.autosize();
    this.actions.submit(text);
  }

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, INPUT_MAX_PX)}px`;
  }

  focusInput() {
    this.input.focus();
  }

  // ---- open / close ----------------------------------------------------------------------------

  get isOpen() {
    return !this.panelEl.hidden;
  }

  showOpen({ focus = true } = {}) {
    this.panelEl.hidden = false;
    this.root.classList.add("is-open");
    this.launcher.setAttribute("aria-expanded", "true");
    this.launcher.setAttribute("aria-label", "Close chat");
    if (focus) this.input.focus();
    this.scrollToEnd(true);
  }

  showClosed() {
    this.panel.close();
    this.panelEl.hidden = true;
    this.root.classList.remove("is-open");
    this.launcher.setAttribute("aria-expanded", "false");
    this.launcher.setAttribute("aria-label", "Open chat");
    this.launcher.focus();
  }

  /** The log or the conversation list. */
  showLog(history) {
    history.hide();
    this.log.hidden = false;
    this.listButton.setAttribute("aria-pressed", "false");
  }

  showHistory(history) {
    this.log.hidden = true;
    this.listButton.setAttribute("aria-pressed", "true");
    history.show();
  }

  // ---- state ---------------------------------------------------------------------------------------

  get busy() {
    return this.sendButton.hidden;
  }

  setBusy(busy) {
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
    this.root.classList.toggle("is-busy", busy);
  }

  /** The "reconnecting" banner, shown only while a run waits for the connection. */
  showReconnecting(show) {
    this.connectionEl.hidden = !show;
    this.connectionEl.textContent = show ? "Connection lost — reconnecting…" : "";
  }

  // ---- the log -----------------------------------------------------------------------------------

  appendMessage(el) {
    this.welcome.hidden = true;
    this.log.append(el);
    this.scrollToEnd(true);
  }

  clearMessages() {
    this.clearError();
    this.log.replaceChildren(this.welcome);
    this.welcome.hidden = false;
  }

  removeSuggestions() {
    for (const el of this.log.querySelectorAll(".chat-suggestions")) el.remove();
  }

  /** Put an accepted/rejected tag on every message that offers this payload. */
  markPayloadOutcome(payloadId, outcome) {
    for (const el of this.log.querySelectorAll(".chat-msg__tools")) {
      if (el.dataset.payloadId === String(payloadId)) {
        el.querySelector(".chat-payload-outcome")?.remove();
        el.append(h("span", { class: `chat-tag chat-payload-outcome chat-tag--${outcome}` }, outcome));
      }
    }
  }

  /** An error at the end of the log, with a Retry button when `onRetry` is given. */
  showError(message, onRetry = null) {
    this.clearError();
    this.errorEl = h(
      "div",
      { class: "chat-error", role: "alert" },
      h("span", { class: "chat-error-text" }, message),
      onRetry ? button("Retry", onRetry, { cls: "chat-btn chat-btn--secondary chat-retry-btn" }) : null,
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

  /** Tell the page (events bubble from the tray's root to `document`). */
  dispatch(name, detail) {
    this.root.dispatchEvent(new CustomEvent(`pagechat:${name}`, { bubbles: true, detail }));
  }
}
