/**
 * The tray's composer: the message box (Enter sends, Shift+Enter a newline, Up takes the last question back), the
 * character counter, the edit bar, Send and Stop, and attachments (the paperclip, paste, and files dropped on the tray).
 * Builds the elements onto the view (`view.input`, `view.sendButton`, ...) and sends every intent to `actions`.
 */
import { h, button, icon } from "../dom.js";
import { formatNumber, gettext, interpolate, ngettext } from "../i18n.js";
import { CONTRACT_NAMES } from "./names.js";

const PAPERCLIP = "M21 11l-8.5 8.5a5 5 0 0 1-7-7L14 4a3.5 3.5 0 0 1 5 5l-8.5 8.5a2 2 0 0 1-3-3L15 7";

/** The composer's elements on `view`; returns the wrap to mount under the log. */
export function composerBuild(view, config, actions) {
  view.input = h("textarea", { class: "chat-input", rows: "1", placeholder: gettext("Ask something…"), "aria-label": gettext(CONTRACT_NAMES.input), dataset: { pagechatInput: "" } });
  view.input.addEventListener("keydown", (e) => {
    // Enter sends, Shift+Enter is a newline; never interrupt an IME composition.
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      view.submit();
    }
    // Up in an empty composer takes the last question back for editing, as ChatGPT and Claude.ai do.
    const plainUp = e.key === "ArrowUp" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing;
    if (plainUp && view.input.value === "" && actions.editLastQuestion()) e.preventDefault();
  });
  view.input.addEventListener("input", () => {
    view.autosize();
    view.updateCounter();
    actions.draftChanged();
  });
  view.maxChars = Number(config.max_message_chars) || 0;
  view.counter = h("div", { class: "chat-counter", id: "chat-counter", "aria-live": "polite", hidden: true });
  if (view.maxChars) view.input.setAttribute("aria-describedby", "chat-counter");
  view.editBar = h(
    "div",
    { class: "chat-editing", hidden: true },
    h("span", {}, gettext("Editing your last question")),
    button(gettext("Cancel edit"), () => actions.cancelEdit(), { cls: "chat-link-btn chat-cancel-edit" }),
  );
  view.sendButton = h("button", { type: "submit", class: "chat-btn chat-btn--primary chat-send-btn", "aria-label": gettext(CONTRACT_NAMES.send), dataset: { pagechatSend: "" } }, gettext("Send"));
  view.stopButton = button(gettext("Stop"), () => actions.stop(), { cls: "chat-btn chat-btn--warning chat-stop-btn", ariaLabel: gettext("Stop generating") });
  view.stopButton.hidden = true;
  // Attachments: the paperclip opens the file picker; files may also be dropped on the tray or pasted.
  const attach = config.attachments || null;
  view.pendingCount = 0;
  view.fileInput = h("input", {
    type: "file", class: "chat-file-input", multiple: true, hidden: true, tabindex: "-1",
    accept: (attach?.types || []).join(","),
  });
  view.fileInput.addEventListener("change", () => {
    const files = [...view.fileInput.files];
    view.fileInput.value = ""; // choosing the same file again fires change again
    if (files.length) actions.attach(files);
  });
  view.attachButton = attach
    ? h("button", { type: "button", class: "chat-icon-btn chat-attach-btn", "aria-label": gettext("Attach file"), title: gettext("Attach an image or a PDF"),
      onclick: () => view.fileInput.click() }, icon(PAPERCLIP, "chat-icon"))
    : null;
  view.pendingEl = h("ul", { class: "chat-pending", "aria-label": gettext("Files to send"), hidden: true });
  if (attach) {
    view.input.addEventListener("paste", (e) => {
      const files = [...(e.clipboardData?.files || [])];
      if (!files.length) return; // plain text pastes as usual
      e.preventDefault();
      actions.attach(files);
    });
  }
  const composer = h("form", { class: "chat-composer" }, view.attachButton, view.fileInput, view.input, view.sendButton, view.stopButton);
  const composerWrap = h("div", { class: "chat-composer-wrap" }, view.editBar, view.pendingEl, composer, view.counter);
  composer.addEventListener("submit", (e) => {
    e.preventDefault();
    view.submit();
  });
  return composerWrap;
}

/** Files dropped anywhere on the tray's panel are attached (a tray configured for attachments only). */
export function dropInstall(view, actions) {
  // dropping files anywhere on the tray attaches them
  view.panelEl.addEventListener("dragover", (e) => {
    if (![...(e.dataTransfer?.types || [])].includes("Files")) return;
    e.preventDefault();
    view.panelEl.classList.add("is-dropping");
  });
  view.panelEl.addEventListener("dragleave", (e) => {
    if (!view.panelEl.contains(e.relatedTarget)) view.panelEl.classList.remove("is-dropping");
  });
  view.panelEl.addEventListener("drop", (e) => {
    view.panelEl.classList.remove("is-dropping");
    const files = [...(e.dataTransfer?.files || [])];
    if (!files.length) return;
    e.preventDefault();
    actions.attach(files);
  });
}

/**
 * The files waiting to be sent, as chips: a thumbnail (or a document icon) and the name, "uploading…"
 * while they upload, and a remove button each.
 * @param {Array<{key, name, status, data, preview}>} items
 * @param {(item) => void} remove
 */
export function pendingShow(view, items, remove) {
  view.pendingCount = items.length;
  view.pendingEl.hidden = !items.length;
  view.pendingEl.replaceChildren(
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

/** Characters left, shown near the limit; over it, Send is disabled and the input says why. */
export function counterUpdate(view) {
  if (!view.maxChars) return;
  const length = view.input.value.trim().length;
  const over = length > view.maxChars;
  view.counter.hidden = length < view.maxChars * 0.8;
  view.counter.textContent = over
    ? interpolate(ngettext("%(over)s character over the limit of %(max)s", "%(over)s characters over the limit of %(max)s", length - view.maxChars), { over: formatNumber(length - view.maxChars), max: formatNumber(view.maxChars) })
    : `${formatNumber(length)} / ${formatNumber(view.maxChars)}`;
  view.counter.classList.toggle("is-over", over);
  view.sendButton.disabled = over;
  if (over) view.input.setAttribute("aria-invalid", "true");
  else view.input.removeAttribute("aria-invalid");
}
