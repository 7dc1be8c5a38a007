/**
 * The tray's frame: launcher, header, conversation log, composer, connection banner, notices
 * and errors, plus the floating panel beside it. Only presentation: every user intent goes to
 * the controller through `actions`; messages (messages.js), the live turn (live.js), the panel
 * content (panel.js) and the conversation list (history.js) render themselves.
 */
import { h, button, icon, ICONS } from "./dom.js";
import { FloatingPanel } from "./panel.js";
import { disableActions } from "./messages.js";
import { formatNumber, gettext, gettext_noop, interpolate, ngettext, outcomeLabel } from "./i18n.js";

// The launcher's, the message box's and the send button's accessible names: these English words are the contract of
// an English page; in another language they are translated like every other name. Tests and programs that must find
// them in any language use their stable attributes (data-pagechat-launcher, data-pagechat-input, data-pagechat-send).
const CONTRACT_NAMES = Object.freeze({ launcher: gettext_noop("Open chat"), input: gettext_noop("Message"), send: gettext_noop("Send") });
const NOTICE_MS = 4000;
const PIN_PX = 40; // this close to the end counts as "at the bottom"
const PHONE_QUERY = "(max-width: 640px)";
const INPUT_MAX_PX = 160;
const WIDE_KEY = "chat-tray:wide"; // localStorage: a reader's preference for every page and tab, unlike the conversation

/** The wide view the reader chose last in this browser (off where storage is refused). */
function storedWide() {
  try {
    return localStorage.getItem(WIDE_KEY) === "1";
  } catch {
    return false;
  }
}

// The keyboard shortcut that opens and focuses the tray: Ctrl+/ (Control+/ on a Mac too; no browser or system uses it).
// Matched by the character, so a layout where "/" needs Shift (German: Shift+7) works the same.
const SHORTCUT = Object.freeze({ aria: "Control+/", shown: "Ctrl+/" });

function isShortcut(e) {
  return e.key === "/" && e.ctrlKey && !e.altKey && !e.metaKey && !e.isComposing;
}

/** Can take the focus: in the document, enabled, and shown. */
function usable(el) {
  return Boolean(el && el.isConnected && !el.disabled && el.getClientRects().length > 0 && typeof el.focus === "function");
}

// The header's icons (decorative: each button is named by its label, which a narrow phone keeps for screen readers only).
const HEADER_ICONS = Object.freeze({
  history: "M12 8v4l3 2M3.5 12a8.5 8.5 0 1 0 2.5-6M3 3v4h4",
  newChat: "M12 5v14M5 12h14",
  expand: "M6 15l6-6 6 6",
});

function headerLabel(path, label) {
  return [icon(path, "chat-icon chat-header-btn__icon"), h("span", { class: "chat-header-btn__label" }, label)];
}

/**
 * The welcome's first questions (config.starters, from the page): buttons that send their words as the user's
 * message. A stable attribute (`data-pagechat-starter`, its position) finds them in any language.
 */
function starterButtons(starters, send) {
  const texts = (Array.isArray(starters) ? starters : []).filter((t) => typeof t === "string" && t.trim()).slice(0, 4);
  if (!texts.length) return null;
  return h(
    "div",
    { class: "chat-starters", role: "group", "aria-label": gettext("Suggested questions") },
    texts.map((text, i) => h("button", { type: "button", class: "chat-starter", dataset: { pagechatStarter: String(i) }, onclick: () => send(text) }, text)),
  );
}

const PAPERCLIP = "M21 11l-8.5 8.5a5 5 0 0 1-7-7L14 4a3.5 3.5 0 0 1 5 5l-8.5 8.5a2 2 0 0 1-3-3L15 7";

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
    // the page's title (config.page_title, translated on the server); an unregistered page is "this page"
    const pageLabel = typeof config.page_title === "string" ? config.page_title : "";
    this.launcher = h(
      "button",
      { type: "button", class: "chat-launcher", "aria-label": gettext(CONTRACT_NAMES.launcher), dataset: { pagechatLauncher: "" }, "aria-expanded": "false", "aria-controls": "chat-tray-panel", onclick: () => actions.toggle(),
        "aria-keyshortcuts": SHORTCUT.aria, title: interpolate(gettext("Keyboard shortcut: %(keys)s"), { keys: SHORTCUT.shown }) },
      icon(ICONS.chat, "chat-icon chat-launcher__icon"),
      h("span", { class: "chat-launcher__label" }, gettext("Chat")),
    );
    this.listButton = button(headerLabel(HEADER_ICONS.history, gettext("History")), () => actions.toggleHistory(), { cls: "chat-header-btn", title: gettext("Your conversations") });
    this.listButton.setAttribute("aria-pressed", "false");
    // On a phone the sheet can step aside (after Accept filled a form); this brings it back.
    this.expandButton = button(headerLabel(HEADER_ICONS.expand, gettext("Show conversation")), () => this.stepAside(false), { cls: "chat-header-btn chat-expand-btn" });
    this.expandButton.hidden = true;
    // Wide view: a wider tray for tables and code, remembered in this browser (localStorage); not on a phone.
    this.wideButton = h("button", { type: "button", class: "chat-icon-btn chat-wide-btn", "aria-label": gettext("Wide view"), title: gettext("Wide view"),
      "aria-pressed": "false", onclick: () => this.setWide(!this.root.classList.contains("is-wide")) }, icon(ICONS.widen));
    this.setWide(storedWide(), false);
    const header = h(
      "header",
      { class: "chat-tray__header" },
      h(
        "div",
        { class: "chat-tray__heading" },
        h("h2", { class: "chat-tray__title", id: "chat-tray-title" }, gettext("Assistant")),
        // the provider is named once, here (not in every message): config.provider_label, e.g. "Offline model"
        config.provider_label || config.offline
          ? h("span", { class: `chat-badge${config.offline ? " chat-badge--offline" : ""}`, title: config.offline ? gettext("Deterministic demo model — no API key configured") : "" }, config.provider_label ? gettext(config.provider_label) : gettext("Offline model"))
          : null,
      ),
      h(
        "div",
        { class: "chat-tray__header-actions" },
        this.listButton,
        this.expandButton,
        button(headerLabel(HEADER_ICONS.newChat, gettext("New chat")), () => actions.newChat(), { cls: "chat-header-btn chat-new-btn" }),
        this.wideButton,
        button("×", () => actions.close(), { cls: "chat-icon-btn", ariaLabel: gettext("Close chat") }),
      ),
    );
    this.connectionEl = h("div", { class: "chat-connection", role: "status", hidden: true });
    this.offlineEl = h("div", { class: "chat-connection chat-offline", role: "status", hidden: true }, gettext("You are offline. Messages cannot be sent until the network is back."));
    this.welcome = h(
      "div",
      { class: "chat-welcome" },
      h("p", { class: "chat-welcome__title" }, config.user ? interpolate(gettext("Hi %(user)s! How can I help?"), { user: config.user }) : gettext("Hi! How can I help?")),
      h("p", { class: "chat-muted" }, pageLabel ? interpolate(gettext("I can see you are on the %(page)s page and can help with what is on it."), { page: pageLabel }) : gettext("I can see this page and can help with what is on it.")),
      starterButtons(config.starters, (text) => actions.startWith(text)),
    );
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

    this.input = h("textarea", { class: "chat-input", rows: "1", placeholder: gettext("Ask something…"), "aria-label": gettext(CONTRACT_NAMES.input), dataset: { pagechatInput: "" } });
    this.input.addEventListener("keydown", (e) => {
      // Enter sends, Shift+Enter is a newline; never interrupt an IME composition.
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
      // Up in an empty composer takes the last question back for editing, as ChatGPT and Claude.ai do.
      const plainUp = e.key === "ArrowUp" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing;
      if (plainUp && this.input.value === "" && actions.editLastQuestion()) e.preventDefault();
    });
    this.input.addEventListener("input", () => {
      this.autosize();
      this.updateCounter();
      actions.draftChanged();
    });
    this.maxChars = Number(config.max_message_chars) || 0;
    this.counter = h("div", { class: "chat-counter", id: "chat-counter", "aria-live": "polite", hidden: true });
    if (this.maxChars) this.input.setAttribute("aria-describedby", "chat-counter");
    this.editBar = h(
      "div",
      { class: "chat-editing", hidden: true },
      h("span", {}, gettext("Editing your last question")),
      button(gettext("Cancel edit"), () => actions.cancelEdit(), { cls: "chat-link-btn chat-cancel-edit" }),
    );
    this.sendButton = h("button", { type: "submit", class: "chat-btn chat-btn--primary chat-send-btn", "aria-label": gettext(CONTRACT_NAMES.send), dataset: { pagechatSend: "" } }, gettext("Send"));
    this.stopButton = button(gettext("Stop"), () => actions.stop(), { cls: "chat-btn chat-btn--warning chat-stop-btn", ariaLabel: gettext("Stop generating") });
    this.stopButton.hidden = true;
    // Attachments: the paperclip opens the file picker; files may also be dropped on the tray or pasted.
    const attach = config.attachments || null;
    this.pendingCount = 0;
    this.fileInput = h("input", {
      type: "file", class: "chat-file-input", multiple: true, hidden: true, tabindex: "-1",
      accept: (attach?.types || []).join(","),
    });
    this.fileInput.addEventListener("change", () => {
      const files = [...this.fileInput.files];
      this.fileInput.value = ""; // choosing the same file again fires change again
      if (files.length) actions.attach(files);
    });
    this.attachButton = attach
      ? h("button", { type: "button", class: "chat-icon-btn chat-attach-btn", "aria-label": gettext("Attach file"), title: gettext("Attach an image or a PDF"),
        onclick: () => this.fileInput.click() }, icon(PAPERCLIP, "chat-icon"))
      : null;
    this.pendingEl = h("ul", { class: "chat-pending", "aria-label": gettext("Files to send"), hidden: true });
    if (attach) {
      this.input.addEventListener("paste", (e) => {
        const files = [...(e.clipboardData?.files || [])];
        if (!files.length) return; // plain text pastes as usual
        e.preventDefault();
        actions.attach(files);
      });
    }
    const composer = h("form", { class: "chat-composer" }, this.attachButton, this.fileInput, this.input, this.sendButton, this.stopButton);
    const composerWrap = h("div", { class: "chat-composer-wrap" }, this.editBar, this.pendingEl, composer, this.counter);
    composer.addEventListener("submit", (e) => {
      e.preventDefault();
      this.submit();
    });

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
    if (attach) {
      // dropping files anywhere on the tray attaches them
      this.panelEl.addEventListener("dragover", (e) => {
        if (![...(e.dataTransfer?.types || [])].includes("Files")) return;
        e.preventDefault();
        this.panelEl.classList.add("is-dropping");
      });
      this.panelEl.addEventListener("dragleave", (e) => {
        if (!this.panelEl.contains(e.relatedTarget)) this.panelEl.classList.remove("is-dropping");
      });
      this.panelEl.addEventListener("drop", (e) => {
        this.panelEl.classList.remove("is-dropping");
        const files = [...(e.dataTransfer?.files || [])];
        if (!files.length) return;
        e.preventDefault();
        actions.attach(files);
      });
    }
    root.replaceChildren(this.launcher, this.panelEl);
    // after a panel closes, focus goes back where it was or, if that is gone, to the message input
    this.panel = new FloatingPanel(root, { fallbackFocus: () => (this.isOpen ? this.input : this.launcher), beside: () => (this.isOpen ? this.input : null) });
    // Escape closes the panel, then the tray - when focus is in the tray or nowhere in
    // particular, so a page's own dialogs keep their Escape.
    document.addEventListener("keydown", (e) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      const focus = document.activeElement;
      if (focus && focus !== document.body && !root.contains(focus)) return;
      if (focus?.type === "search" && focus.value) return; // its own Escape empties it first
      if (this.panel.isOpen) this.panel.close();
      else if (this.editBar && !this.editBar.hidden) actions.cancelEdit();
      else if (this.isOpen) actions.close();
      else return;
      e.preventDefault();
    });
    // The shortcut (docs/tray.md) opens the tray and puts the focus in its message box, from anywhere on the page;
    // so does a link to #chat-tray (a page's "Skip to chat" link).
    document.addEventListener("keydown", (e) => {
      if (!isShortcut(e)) return;
      e.preventDefault();
      this.focusTray();
    });
    document.addEventListener("click", (e) => {
      const link = e.target instanceof Element ? e.target.closest(`a[href="#${root.id || "chat-tray"}"]`) : null;
      if (!link || e.defaultPrevented) return;
      e.preventDefault();
      this.focusTray();
    });
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
    this.pendingCount = items.length;
    this.pendingEl.hidden = !items.length;
    this.pendingEl.replaceChildren(
      ...items.map((item) => {
        const thumb = item.data?.thumbnail_url || item.preview;
        return h(
          "li",
          { class: `chat-pending__item${item.status === "uploading" ? " is-uploading" : ""}`, dataset: { name: item.name } },
          thumb ? h("img", { class: "chat-pending__thumb", src: thumb, alt: "" }) : icon("M6 2h9l5 5v15H6zM14 2v6h6", "chat-icon chat-pending__icon"),
          h("span", { class: "chat-pending__name" }, item.name),
          item.status === "uploading" ? h("span", { class: "chat-muted chat-pending__status" }, gettext("Uploading…")) : null,
          h("button", { type: "button", class: "chat-icon-btn chat-pending__remove", "aria-label": interpolate(gettext("Remove %(name)s"), { name: item.name }), title: gettext("Remove"),
            onclick: () => remove(item) }, "×"),
        );
      }),
    );
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
    if (!this.maxChars) return;
    const length = this.input.value.trim().length;
    const over = length > this.maxChars;
    this.counter.hidden = length < this.maxChars * 0.8;
    this.counter.textContent = over
      ? interpolate(ngettext("%(over)s character over the limit of %(max)s", "%(over)s characters over the limit of %(max)s", length - this.maxChars), { over: formatNumber(length - this.maxChars), max: formatNumber(this.maxChars) })
      : `${formatNumber(length)} / ${formatNumber(this.maxChars)}`;
    this.counter.classList.toggle("is-over", over);
    this.sendButton.disabled = over;
    if (over) this.input.setAttribute("aria-invalid", "true");
    else this.input.removeAttribute("aria-invalid");
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
