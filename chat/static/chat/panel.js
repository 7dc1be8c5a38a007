/**
 * The floating panel beside the tray: custom payload cards (with Accept/Reject) and the
 * staff diagnostics view. One panel at a time; opening another replaces it.
 */
import { h, button, iconNode, jsonText } from "./dom.js";
import { findPayloadHandler } from "./registry.js";
import { fallbackCard } from "./payloads.js";
import { gettext } from "./i18n.js";

export class FloatingPanel {
  /**
   * @param {{fallbackFocus?: () => HTMLElement, beside?: () => HTMLElement|null}} options  where focus goes when the
   * opener is gone; where Tab goes past the card's last control (the tray's message box), when the card leaves it in view
   */
  constructor(host, { fallbackFocus = null, beside = null } = {}) {
    this.fallbackFocus = fallbackFocus;
    this.beside = beside;
    this.title = h("h2", { class: "chat-panel__title", id: "chat-panel-title", tabindex: "-1" });
    this.icon = h("span", { class: "chat-panel__icon", hidden: true });
    this.body = h("div", { class: "chat-panel__body" });
    this.footer = h("div", { class: "chat-panel__footer" });
    this.el = h(
      "section",
      { class: "chat-panel", role: "dialog", "aria-labelledby": "chat-panel-title", hidden: true },
      h("header", { class: "chat-panel__header" }, this.icon, this.title, button("×", () => this.close(), { cls: "chat-icon-btn", ariaLabel: gettext("Close panel") })),
      this.body,
      this.footer,
    );
    this.returnFocus = null;
    this.el.addEventListener("keydown", (e) => this.keepTab(e));
    host.append(this.el);
  }

  /**
   * Tab never leaves the card for what is behind it (the page's header): past its last control (Shift+Tab: before its
   * first) the focus goes to the tray's message box when the card does not cover it, the card not being modal, and
   * otherwise (a phone's card covers the tray) round to its other end.
   */
  keepTab(e) {
    if (e.key !== "Tab" || e.altKey || e.ctrlKey || e.metaKey) return;
    const controls = tabbable(this.el);
    const active = document.activeElement;
    const atEnd = e.shiftKey ? active === controls[0] || active === this.title : active === controls.at(-1);
    if (controls.length && !atEnd) return;
    e.preventDefault();
    const beside = this.beside?.();
    if (beside && inView(beside)) beside.focus();
    else (e.shiftKey ? controls.at(-1) : controls[0])?.focus();
  }

  get isOpen() {
    return !this.el.hidden;
  }

  /**
   * Show content: {title, icon, width, body: Node, buttons: [{label, cls, onClick}], kind}. `focus`: the person opened
   * it, so its title takes the focus; a panel that opens by itself (an answer's card) leaves the focus, and every key
   * typed, where the person put them.
   */
  open({ title, icon = null, width = null, body, buttons = [], kind = "payload", focus = true }) {
    const active = document.activeElement;
    if (focus && !this.el.contains(active)) this.returnFocus = active;
    else if (!this.isOpen) this.returnFocus = null;
    this.el.dataset.kind = kind;
    this.el.style.setProperty("--chat-panel-width", width || "");
    this.title.textContent = title;
    const iconEl = iconNode(icon, "chat-icon chat-panel__icon-svg");
    this.icon.replaceChildren(...(iconEl ? [iconEl] : []));
    this.icon.hidden = !iconEl;
    this.body.replaceChildren(body);
    this.footer.replaceChildren(...buttons.map((b) => button(b.label, b.onClick, { cls: b.cls })));
    this.footer.hidden = buttons.length === 0;
    this.el.hidden = false;
    if (focus) this.title.focus();
  }

  close() {
    if (!this.isOpen) return;
    // focus goes back only from inside the panel (or from nowhere): closing never moves it away from where the person is
    const active = document.activeElement;
    const inside = !active || active === document.body || this.el.contains(active);
    this.el.hidden = true;
    this.body.replaceChildren();
    const target = this.returnFocus;
    this.returnFocus = null;
    if (!inside) return;
    const usable = target && target !== document.body && target.isConnected && !target.disabled && target.getClientRects().length > 0;
    if (usable && typeof target.focus === "function") target.focus();
    else this.fallbackFocus?.()?.focus();
  }
}

/** The elements of `el` that Tab reaches, in order. */
function tabbable(el) {
  const candidates = el.querySelectorAll("a[href], button, input, select, textarea, summary, [tabindex]");
  return [...candidates].filter((c) => c.tabIndex >= 0 && !c.disabled && c.getClientRects().length > 0);
}

/** Shown and not covered (by the card, or anything else) at its middle. */
function inView(el) {
  const box = el.getBoundingClientRect();
  if (!box.width || !box.height) return false;
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return Boolean(hit && (hit === el || el.contains(hit)));
}

/** True when this payload has a handler that wants a panel (tool_history does not). */
export function payloadOpensPanel(payload) {
  const handler = payload && findPayloadHandler(payload.type);
  return Boolean(handler && handler.panel !== false && typeof handler.render === "function");
}

/**
 * Open a custom payload in the panel. Types without a renderer get the generic fallback card,
 * so a user can still see what the assistant proposed. `focus`: false for a card that opens by itself.
 */
export function showPayload(panel, payload, tray, { focus = true } = {}) {
  const handler = findPayloadHandler(payload.type);
  const hasRender = handler && handler.panel !== false && typeof handler.render === "function";
  const data = payload.data;
  let body;
  try {
    body = hasRender ? handler.render(data, payload) : fallbackCard(payload);
    if (!(body instanceof Node)) body = h("div", {}, String(body ?? ""));
  } catch (err) {
    console.error(`chat tray: payload handler ${payload.type} failed to render`, err);
    body = h("p", { class: "chat-error-text" }, gettext("This card could not be shown."));
  }
  const buttons = [];
  const decide = (fn, outcome) => async () => {
    try {
      // A handler returns false when it could not act (e.g. the page is on another tab): the
      // proposal stays open and unmarked, and the handler has told the user why.
      if ((await fn(data, payload)) === false) return;
      tray.markPayload(payload, outcome);
    } catch (err) {
      console.error(`chat tray: payload ${outcome} failed`, err);
      tray.notice(outcome === "accepted" ? gettext("Could not apply this proposal.") : gettext("Could not reject this proposal."), "error");
    }
    panel.close();
  };
  const onAccept = hasRender && typeof handler.onAccept === "function";
  const onReject = hasRender && typeof handler.onReject === "function";
  // A card its page cannot apply: the answer's own server action that applies it is the card's primary button (the same
  // path as that button in the chat), with Reject beside it, so a person decides without leaving the card.
  const action = onAccept ? null : tray.proposalAction?.(payload);
  if (onAccept) {
    buttons.push({ label: gettext("Accept"), cls: "chat-btn chat-btn--primary", onClick: decide(handler.onAccept.bind(handler), "accepted") });
  } else if (action) {
    buttons.push({ label: action.label || gettext("Accept"), cls: "chat-btn chat-btn--primary", onClick: () => tray.acceptWith(action, payload) });
  }
  if (onReject) {
    buttons.push({ label: gettext("Reject"), cls: "chat-btn chat-btn--secondary", onClick: decide(handler.onReject.bind(handler), "rejected") });
  } else if (action) {
    buttons.push({ label: gettext("Reject"), cls: "chat-btn chat-btn--secondary", onClick: decide(() => undefined, "rejected") });
  }
  const container = h("div", { class: "chat-payload", dataset: { payloadType: String(payload.type) } }, body);
  panel.open({
    // the renderer's title, else the type's (protocol addition: custom_payload.title), else the type itself (older servers)
    title: (hasRender && handler.title) || payload.title || String(payload.type || gettext("Details")),
    icon: hasRender ? handler.icon : "data",
    width: hasRender ? handler.width : null,
    body: container,
    buttons,
    kind: "payload",
    focus,
  });
}

// Diagnostics keys in the order staff read them; anything else follows.
const DIAGNOSTIC_ORDER = ["model", "provider", "tools", "system_prompt", "system", "messages", "raw_output", "output", "usage", "timings"];

/** Staff-only: the run's diagnostics, each section as preformatted text. */
export function showDiagnostics(panel, diagnostics) {
  const keys = Object.keys(diagnostics || {});
  const ordered = [...DIAGNOSTIC_ORDER.filter((k) => keys.includes(k)), ...keys.filter((k) => !DIAGNOSTIC_ORDER.includes(k))];
  const body = h("div", { class: "chat-diagnostics" });
  for (const key of ordered) {
    body.append(
      h(
        "details",
        { class: "chat-diagnostics__section", open: ["model", "usage", "timings"].includes(key) },
        h("summary", {}, key.replaceAll("_", " ")),
        h("pre", { class: "chat-pre" }, jsonText(diagnostics[key])),
      ),
    );
  }
  panel.open({ title: gettext("Diagnostics"), width: "560px", body, kind: "diagnostics" });
}
