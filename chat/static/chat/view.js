/**
 * The tray's frame: launcher, header, conversation log, composer, connection banner, notices
 * and errors, plus the floating panel beside it. Only presentation: every user intent goes to
 * the controller through `actions`; messages (messages.js), the live turn (live.js), the panel
 * content (panel.js) and the conversation list (history.js) render themselves.
 */
import { h, button, icon } from "./dom.js";
import { FloatingPanel } from "./panel.js";
import { disableActions } from "./messages.js";
import { gettext, outcomeLabel } from "./i18n.js";
import { composerBuild, counterUpdate, dropInstall, pendingShow } from "./view/composer.js";
import { documentKeysInstall } from "./view/keys.js";
import { CONTRACT_NAMES } from "./view/names.js";
import { headerBuild, welcomeBuild, WIDE_KEY } from "./view/header.js";

const NOTICE_MS = 4000;
const PIN_PX = 40; // this close to the end counts as "at the bottom"
const PHONE_QUERY = "(max-width: 640px)";
const INPUT_MAX_PX = 160;

/** Can take the focus: in the document, enabled, and shown. */
function usable(el) {
  return Boolean(el && el.isConnected && !el.disabled && el.getClientRects().length > 0 && typeof el.focus === "function");
}

export class TrayView {
  /**
   * @param {HTMLElement} root  the [data-chat-tray] element
   * @param {object} config  the tray config (page, user, offline)
   * @param {{toggle(), close(), submit(text), stop(), newChat(), toggleHistory()}} actions
   */
  constructor(root, config, actions) {
    this.root = root;
    this.actions = actions;
    if (config.language) root.setAttribute("lang", config.language); // the tray speaks the page's language
    const header = headerBuild(this, config, actions);
    this.connectionEl = h("div", { class: "chat-connection", role: "status", hidden: true });
    this.offlineEl = h("div", { class: "chat-connection chat-offline", role: "status", hidden: true }, gettext("You are offline. Messages cannot be sent until the network is back."));
    this.welcome = welcomeBuild(config, actions);
    // a long conversation is shown from its latest messages; this reads the ones before (at the top of the log)
    this.earlierButton = button(gettext("Show earlier messages"), () => actions.loadEarlier(), { cls: "chat-btn chat-btn--secondary chat-earlier-btn" });
    this.earlierButton.hidden = true;
    this.log = h("div", { class: "chat-log", role: "log", "aria-live": "polite", "aria-label": gettext("Conversation"), tabindex: "0" }, this.earlierButton, this.welcome);
    // Follow new content only while the reader is at the bottom; otherwise offer a way back.
    this.pinned = true;
    this.log.addEventListener("scroll", () => {
      this.pinned = this.distanceFromEnd() < PIN_PX;
      if (this.pinned) this.jumpButton.hidden = true;
    }, { passive: true });
    this.jumpButton = button(gettext("Jump to latest"), () => this.scrollToEnd(true), { cls: "chat-btn chat-btn--secondary chat-jump-btn" });
    this.jumpButton.hidden = true;
    this.historySlot = h("div", { class: "chat-history-slot" });
    this.noticeEl = h("div", { class: "chat-notice", role: "status", "aria-live": "polite", hidden: true });

    const composerWrap = composerBuild(this, config, actions);

    this.panelEl = h(
      "aside",
      { class: "chat-tray", id: "chat-tray-panel", "aria-labelledby": "chat-tray-title", hidden: true },
      header,
      this.connectionEl,
      this.offlineEl,
      this.historySlot,
      this.log,
      this.jumpButton,
      this.noticeEl,
      composerWrap,
    );
    if (config.attachments) dropInstall(this, actions);
    root.replaceChildren(this.launcher, this.panelEl);
    // after a panel closes, focus goes back where it was or, if that is gone, to the message input
    this.panel = new FloatingPanel(root, { fallbackFocus: () => (this.isOpen ? this.input : this.launcher), beside: () => (this.isOpen ? this.input : null) });
    documentKeysInstall(this, root, actions);
    this.keepFocus();
  }

  /** Open the tray (it takes the focus) or, open already, move the focus to its message box. */
  focusTray() {
    if (this.isOpen) this.input.focus();
    else this.actions.toggle();
  }

  /**
   * Focus never falls to <body> from inside the tray: when the element that had it is removed, disabled or hidden
   * (a card closed, a decided action's button disabled, a conversation deleted), the message box takes it (the
   * launcher when the tray is closed). Focus the person moved out of the tray (a click on the page) stays where it went.
   */
  keepFocus() {
    let last = null;
    const rescue = () => {
      if (!last) return;
      const active = document.activeElement;
      if (active && active !== document.body) {
        if (!this.root.contains(active)) last = null; // the person went on to the page
        return;
      }
      const gone = last;
      last = null;
      if (usable(gone)) return; // still there: the person moved away (a click on the page)
      const target = this.isOpen ? this.input : this.launcher;
      if (usable(target)) target.focus({ preventScroll: true });
    };
    this.root.addEventListener("focusin", (e) => {
      last = e.target;
    });
    this.root.addEventListener("focusout", () => setTimeout(rescue, 0)); // where the focus went is known after the event
    new MutationObserver(rescue).observe(this.root, { subtree: true, childList: true, attributes: true, attributeFilter: ["disabled", "hidden", "class"] });
  }

  /** Put the conversation list (history.js) in its place above the log. */
  mountHistory(el) {
    this.historySlot.replaceWith(el);
    this.historySlot = el;
  }

  /**
   * The files waiting to be sent, as chips: a thumbnail (or a document icon) and the name, "uploading…"
   * while they upload, and a remove button each.
   * @param {Array<{key, name, status, data, preview}>} items
   * @param {(item) => void} remove
   */
  showPending(items, remove) {
    pendingShow(this, items, remove);
  }

  submit() {
    const text = this.input.value;
    if ((!text.trim() && !this.pendingCount) || this.busy || this.overLimit) return;
    this.input.value = "";
    this.autosize();
    this.updateCounter();
    if (this.actions.submit(text) === false) {
      this.input.value = text; // refused (offline, busy): nothing typed is lost
      this.updateCounter();
    }
  }

  get overLimit() {
    return this.maxChars > 0 && this.input.value.trim().length > this.maxChars;
  }

  /** Characters left, shown near the limit; over it, Send is disabled and the input says why. */
  updateCounter() {
    counterUpdate(this);
  }

  /** Edit mode: the last question in the composer, with a way out. */
  showEditing(on, text = "") {
    this.editBar.hidden = !on;
    this.root.classList.toggle("is-editing", on);
    if (on) {
      this.input.value = text;
      this.autosize();
      this.updateCounter();
      this.input.focus();
      this.input.setSelectionRange(text.length, text.length);
    }
  }

  /** After a verdict: an optional comment box under the answer's actions (none when the verdict was cleared). */
  showFeedbackComment(bar, message, onSubmit) {
    bar.parentElement?.querySelector(".chat-feedback-form")?.remove();
    if (!message) return;
    const id = `chat-feedback-${message.id}`;
    const area = h("textarea", { id, class: "chat-input chat-feedback-input", rows: "2", maxlength: "2000" }, message.feedback_comment || "");
    const form = h(
      "form",
      { class: "chat-feedback-form" },
      h("label", { for: id }, message.feedback === "bad" ? gettext("What went wrong? (optional)") : gettext("What was good? (optional)")),
      area,
      h(
        "div",
        { class: "chat-feedback-form__buttons" },
        h("button", { type: "submit", class: "chat-btn chat-btn--primary" }, gettext("Send feedback")),
        button(gettext("Skip"), () => form.remove(), { cls: "chat-btn chat-btn--secondary" }),
      ),
    );
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      await onSubmit(area.value.trim());
      form.remove();
      bar.querySelector(".chat-feedback[aria-pressed=true]")?.focus();
    });
    bar.after(form);
    area.focus();
  }

  /** The browser has no network: a banner, until it is back. */
  showOffline(offline) {
    this.offlineEl.hidden = !offline;
    this.root.classList.toggle("is-offline", offline);
  }

  /** Wide view on or off (`remember`: kept in this browser for the next page). */
  setWide(on, remember = true) {
    this.root.classList.toggle("is-wide", on);
    this.wideButton.setAttribute("aria-pressed", String(on));
    if (!remember) return;
    try {
      if (on) localStorage.setItem(WIDE_KEY, "1");
      else localStorage.removeItem(WIDE_KEY);
    } catch {
      // storage refused (private mode, a full quota): the choice holds for this page only
    }
  }

  /** On a phone, fold the sheet down to its header and composer (so the page's form shows); false unfolds it. */
  stepAside(aside = true) {
    const phone = typeof window.matchMedia === "function" && window.matchMedia(PHONE_QUERY).matches;
    const on = aside && phone;
    this.root.classList.toggle("is-aside", on);
    this.expandButton.hidden = !on;
    if (!on && !aside) this.scrollToEnd(true);
  }

  /** Regenerate and Continue only on the latest answer, Edit only on the latest question. */
  refreshLatestActions() {
    const answers = [...this.log.querySelectorAll(".chat-msg--assistant:not(.chat-msg--live)")];
    const questions = [...this.log.querySelectorAll(".chat-msg--user")];
    answers.forEach((el, i) => {
      for (const btn of el.querySelectorAll(".chat-regenerate, .chat-continue")) btn.hidden = i !== answers.length - 1;
    });
    questions.forEach((el, i) => {
      const btn = el.querySelector(".chat-edit");
      if (btn) btn.hidden = i !== questions.length - 1;
    });
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
    // what a page's CSS makes room by ({% chat_tray_head %} sets it before the first paint of a page the tray opens on)
    document.documentElement.setAttribute("data-chat-tray-open", "");
    this.launcher.setAttribute("aria-expanded", "true");
    this.launcher.setAttribute("aria-label", gettext("Close chat"));
    if (focus) this.input.focus();
    if (this.input.value) this.autosize(); // a restored draft was set while the panel was hidden (no height then)
    this.scrollToEnd(true);
  }

  /** Put a restored draft into the composer (after a navigation); its height is set when the panel shows. */
  setComposerText(text) {
    this.input.value = text;
    if (!this.panelEl.hidden) this.autosize();
    this.updateCounter();
  }

  showClosed() {
    this.panel.close();
    this.panelEl.hidden = true;
    this.stepAside(false);
    this.root.classList.remove("is-open");
    document.documentElement.removeAttribute("data-chat-tray-open");
    this.launcher.setAttribute("aria-expanded", "false");
    this.launcher.setAttribute("aria-label", gettext(CONTRACT_NAMES.launcher));
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
    const stopHadFocus = document.activeElement === this.stopButton;
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
    this.root.classList.toggle("is-busy", busy);
    for (const btn of this.log.querySelectorAll(".chat-regenerate, .chat-edit, .chat-continue")) btn.disabled = busy;
    if (stopHadFocus && !busy) this.input.focus(); // the Stop button is gone: never leave focus on <body>
  }

  /** The "reconnecting" banner, shown only while a run waits for the connection. */
  showReconnecting(show) {
    this.connectionEl.hidden = !show;
    this.connectionEl.textContent = show ? gettext("Connection lost — reconnecting…") : "";
  }

  // ---- the log -----------------------------------------------------------------------------------

  /** Add to the log; `force` scrolls to it (the user's own message), else it follows only a reader at the bottom. */
  appendMessage(el, { force = false } = {}) {
    this.welcome.hidden = true;
    this.log.append(el);
    if (force) this.scrollToEnd(true);
    else this.contentChanged();
  }

  /** New content arrived: follow it if the reader is at the bottom, else show "Jump to latest". */
  contentChanged() {
    if (this.pinned) this.scrollToEnd(true);
    else this.jumpButton.hidden = false;
  }

  distanceFromEnd() {
    return this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight;
  }

  clearMessages() {
    this.clearError();
    this.earlierButton.hidden = true;
    this.log.replaceChildren(this.earlierButton, this.welcome);
    this.welcome.hidden = false;
  }

  /** Offer the conversation's earlier messages (`on`); `busy` while they are read. */
  showEarlier(on, busy = false) {
    this.earlierButton.hidden = !on;
    this.earlierButton.disabled = busy;
  }

  /** Put earlier messages above the ones shown; what the reader was looking at stays where it was. */
  prependMessages(elements) {
    const fromEnd = this.log.scrollHeight - this.log.scrollTop;
    this.log.setAttribute("aria-busy", "true"); // history coming back is not news to read out
    this.earlierButton.after(...elements);
    this.log.scrollTop = this.log.scrollHeight - fromEnd;
    this.log.removeAttribute("aria-busy");
    if (this.earlierButton.hidden) this.log.focus({ preventScroll: true }); // the button that had focus is gone
  }

  removeSuggestions() {
    for (const el of this.log.querySelectorAll(".chat-suggestions")) el.remove();
  }

  /**
   * Put an accepted/rejected tag on every message that offers this payload, and disable the suggested actions that
   * would accept or reject it again (one accept path: the card's Accept and the chat's button are the same decision).
   */
  markPayloadOutcome(payloadId, outcome) {
    disableActions(this.log, payloadId);
    for (const el of this.log.querySelectorAll(".chat-msg__tools")) {
      if (el.dataset.payloadId === String(payloadId)) {
        el.querySelector(".chat-payload-outcome")?.remove();
        el.append(h("span", { class: `chat-tag chat-payload-outcome chat-tag--${outcome}` }, outcomeLabel(outcome)));
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
      onRetry ? button(gettext("Retry"), onRetry, { cls: "chat-btn chat-btn--secondary chat-retry-btn" }) : null,
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

  /** Scroll to the newest content (`force`), or only when the reader is already at the bottom. */
  scrollToEnd(force = false) {
    if (!force && !this.pinned) return;
    this.log.scrollTop = this.log.scrollHeight;
    this.pinned = true;
    this.jumpButton.hidden = true;
  }

  /** Tell the page (events bubble from the tray's root to `document`). */
  dispatch(name, detail) {
    this.root.dispatchEvent(new CustomEvent(`pagechat:${name}`, { bubbles: true, detail }));
  }
}
