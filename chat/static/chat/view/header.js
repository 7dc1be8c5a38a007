/**
 * The tray's launcher, its header (title, the provider's badge, History, Show conversation, New chat, Wide view,
 * Close) and the welcome with the page's first questions. Builds the elements onto the view; intents go to `actions`.
 */
import { h, button, icon, ICONS } from "../dom.js";
import { gettext, interpolate } from "../i18n.js";
import { SHORTCUT } from "./keys.js";
import { CONTRACT_NAMES } from "./names.js";

export const WIDE_KEY = "chat-tray:wide"; // localStorage: a reader's preference for every page and tab, unlike the conversation

/** The wide view the reader chose last in this browser (off where storage is refused). */
function storedWide() {
  try {
    return localStorage.getItem(WIDE_KEY) === "1";
  } catch {
    return false;
  }
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

/** `view.launcher`, `view.listButton`, `view.expandButton`, `view.wideButton` (set as stored); returns the header. */
export function headerBuild(view, config, actions) {
  view.launcher = h(
    "button",
    { type: "button", class: "chat-launcher", "aria-label": gettext(CONTRACT_NAMES.launcher), dataset: { pagechatLauncher: "" }, "aria-expanded": "false", "aria-controls": "chat-tray-panel", onclick: () => actions.toggle(),
      "aria-keyshortcuts": SHORTCUT.aria, title: interpolate(gettext("Keyboard shortcut: %(keys)s"), { keys: SHORTCUT.shown }) },
    icon(ICONS.chat, "chat-icon chat-launcher__icon"),
    h("span", { class: "chat-launcher__label" }, gettext("Chat")),
  );
  view.listButton = button(headerLabel(HEADER_ICONS.history, gettext("History")), () => actions.toggleHistory(), { cls: "chat-header-btn", title: gettext("Your conversations") });
  view.listButton.setAttribute("aria-pressed", "false");
  // On a phone the sheet can step aside (after Accept filled a form); this brings it back.
  view.expandButton = button(headerLabel(HEADER_ICONS.expand, gettext("Show conversation")), () => view.stepAside(false), { cls: "chat-header-btn chat-expand-btn" });
  view.expandButton.hidden = true;
  // Wide view: a wider tray for tables and code, remembered in this browser (localStorage); not on a phone.
  view.wideButton = h("button", { type: "button", class: "chat-icon-btn chat-wide-btn", "aria-label": gettext("Wide view"), title: gettext("Wide view"),
    "aria-pressed": "false", onclick: () => view.setWide(!view.root.classList.contains("is-wide")) }, icon(ICONS.widen));
  view.setWide(storedWide(), false);
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
      view.listButton,
      view.expandButton,
      button(headerLabel(HEADER_ICONS.newChat, gettext("New chat")), () => actions.newChat(), { cls: "chat-header-btn chat-new-btn" }),
      view.wideButton,
      button("×", () => actions.close(), { cls: "chat-icon-btn", ariaLabel: gettext("Close chat") }),
    ),
  );
  return header;
}

/** The welcome: a greeting, what the tray sees (the page's title), the page's first questions. */
export function welcomeBuild(config, actions) {
  // the page's title (config.page_title, translated on the server); an unregistered page is "this page"
  const pageLabel = typeof config.page_title === "string" ? config.page_title : "";
  return h(
    "div",
    { class: "chat-welcome" },
    h("p", { class: "chat-welcome__title" }, config.user ? interpolate(gettext("Hi %(user)s! How can I help?"), { user: config.user }) : gettext("Hi! How can I help?")),
    h("p", { class: "chat-muted" }, pageLabel ? interpolate(gettext("I can see you are on the %(page)s page and can help with what is on it."), { page: pageLabel }) : gettext("I can see this page and can help with what is on it.")),
    starterButtons(config.starters, (text) => actions.startWith(text)),
  );
}
