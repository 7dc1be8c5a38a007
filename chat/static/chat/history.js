/** The conversation list inside the tray: the user's conversations over REST, a page at a time, searchable by their
 * titles and messages, grouped under "Pinned" and by when they were last active; open, rename, pin, download or
 * delete (one or all). */
import { h, button, icon } from "./dom.js";
import { formatDate, formatMonth, gettext, interpolate } from "./i18n.js";
import { PreferencesForm } from "./preferences.js";

const DISARM_MS = 3000;
const PAGE_SIZE = 50; // conversations per request: a long history is listed a part at a time
const MAX_LIMIT = 200; // the API's largest page
const SEARCH_DELAY_MS = 250; // one search per pause in typing, not one per key
const DAY_MS = 24 * 60 * 60 * 1000;

/** The heading a conversation is listed under: "Pinned", else when it was last active, in the reader's own days
 * ("Today", "Yesterday", "Previous 7 days", "Previous 30 days", then the month: "October 2026"). */
export function conversationGroup(conv, now = new Date()) {
  if (conv.pinned) return gettext("Pinned");
  const when = conv.updated_at ? new Date(conv.updated_at) : null;
  if (!when || Number.isNaN(when.getTime())) return gettext("Older");
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  // calendar days, not 24-hour spans: last night at 23:00 is "Yesterday" at 08:00 (rounded: a DST day is 23 or 25 hours)
  const days = Math.round((midnight - new Date(when.getFullYear(), when.getMonth(), when.getDate()).getTime()) / DAY_MS);
  if (days <= 0) return gettext("Today");
  if (days === 1) return gettext("Yesterday");
  if (days < 7) return gettext("Previous 7 days");
  if (days < 30) return gettext("Previous 30 days");
  return formatMonth(when);
}

/** `text` as nodes with each occurrence of `query` (any case) in a <mark>: text nodes only, never parsed as HTML. */
export function marked(text, query) {
  const needle = query.toLowerCase();
  const haystack = text.toLowerCase();
  if (!needle || haystack.length !== text.length) return [text]; // a case change that alters lengths: nothing to align
  const out = [];
  let from = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, from)) {
    if (at > from) out.push(text.slice(from, at));
    out.push(h("mark", {}, text.slice(at, at + needle.length)));
    from = at + needle.length;
  }
  if (from < text.length) out.push(text.slice(from));
  return out;
}

export class HistoryView {
  constructor(tray) {
    this.tray = tray;
    this.el = h("div", { class: "chat-conversations", hidden: true });
    this.generation = 0; // the latest list asked for: an older answer that arrives later is dropped
    this.searchTimer = null;
    this.query = "";
    this.shown = 0; // conversations listed so far from the server (the next page starts here)
  }

  get isOpen() {
    return !this.el.hidden;
  }

  hide() {
    this.el.hidden = true;
  }

  async show() {
    this.el.hidden = false;
    const id = "chat-conversation-search";
    const search = h("input", { id, class: "chat-input chat-conversations__search", type: "search", maxlength: "200", autocomplete: "off",
      placeholder: gettext("Search conversations") });
    const find = () => {
      clearTimeout(this.searchTimer);
      this.load(search.value.trim());
    };
    search.addEventListener("input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(find, SEARCH_DELAY_MS);
    });
    this.results = h("div", { class: "chat-conversations__results" }, h("p", { class: "chat-muted" }, gettext("Loading…")));
    const preferences = button(gettext("Your preferences"), () => this.showPreferences(), { cls: "chat-link-btn chat-conversations__preferences" });
    this.el.replaceChildren(
      h("div", { class: "chat-conversations__header" },
        h("h3", { class: "chat-conversations__title" }, gettext("Conversations")), preferences),
      h("form", { class: "chat-conversations__search-form", role: "search", onsubmit: (e) => { e.preventDefault(); find(); } },
        h("label", { for: id, class: "chat-offscreen" }, gettext("Search conversations")), search),
      this.results,
    );
    if (await this.load("")) (this.results.querySelector("button") ?? this.el).focus?.();
  }

  /** "Your preferences": the form in place of the list; Save or Cancel brings the list back, its button focused. */
  async showPreferences() {
    const form = new PreferencesForm(this.tray, async () => {
      await this.show();
      this.el.querySelector(".chat-conversations__preferences")?.focus();
    });
    this.generation++; // a list still loading must not replace the form
    this.el.replaceChildren(form.el);
    await form.load();
  }

  /** List the first `limit` conversations that match `query` (all when empty); false if a newer list replaced it. */
  async load(query, limit = PAGE_SIZE) {
    const generation = ++this.generation;
    let items;
    try {
      items = await this.tray.api.listConversations({ q: query, limit });
    } catch {
      if (generation !== this.generation) return false;
      this.results.replaceChildren(h("p", { class: "chat-error-text" }, gettext("Could not load your conversations.")));
      return true;
    }
    if (generation !== this.generation) return false;
    this.query = query;
    this.shown = items.length;
    this.groups = h("div", { class: "chat-conversation-groups" });
    this.append(items);
    const none = query ? interpolate(gettext("No conversations match “%(query)s”."), { query }) : gettext("No conversations yet.");
    this.results.replaceChildren(...[ // replaceChildren would show a null as the text "null"
      items.length ? this.groups : h("p", { class: "chat-muted", role: "status" }, none),
      items.length === limit ? this.more(query) : null,
      items.length && !query ? this.deleteAll() : null, // "all" means all: not offered over a filtered list
    ].filter(Boolean));
    return true;
  }

  /** Add conversations under their headings, in the server's order (a heading already there takes them at its end;
   * a conversation already listed is not repeated); the rows added. */
  append(items) {
    const now = new Date();
    const listed = new Set([...this.groups.querySelectorAll(".chat-conversation")].map((b) => b.dataset.conversationId));
    const added = [];
    for (const conv of items) {
      if (listed.has(String(conv.id))) continue;
      const label = conversationGroup(conv, now);
      let list = [...this.groups.querySelectorAll(".chat-conversation-list")].find((l) => l.dataset.group === label);
      if (!list) {
        const id = `chat-conversation-group-${this.groups.children.length}`;
        list = h("ul", { class: "chat-conversation-list", "aria-labelledby": id, dataset: { group: label } });
        this.groups.append(h("section", { class: "chat-conversation-group" }, h("h4", { id, class: "chat-conversation-group__title" }, label), list));
      }
      const row = this.item(conv);
      list.append(row);
      added.push(row);
    }
    return added;
  }

  /** gettext("Show more"): the next page of the same list, appended. */
  more(query) {
    const generation = this.generation;
    const row = h("p", { class: "chat-conversations__more" });
    const more = button(gettext("Show more"), async () => {
      more.disabled = true;
      let items;
      try {
        items = await this.tray.api.listConversations({ q: query, limit: PAGE_SIZE, offset: this.shown });
      } catch {
        more.disabled = false;
        this.tray.notice(gettext("Could not load your conversations."), "error");
        return;
      }
      if (generation !== this.generation) return; // the list was searched or reloaded meanwhile
      this.shown += items.length;
      const added = this.append(items);
      if (items.length === PAGE_SIZE) row.replaceWith(this.more(query));
      else row.remove();
      (added[0]?.querySelector("button") ?? this.groups).focus?.();
    }, { cls: "chat-link-btn" });
    row.append(more);
    return row;
  }

  /** Pin or unpin, then list again as far as it was listed (the server orders it), the row's menu button focused. */
  async pin(conv, pinned) {
    try {
      await this.tray.api.pinConversation(conv.id, pinned);
    } catch {
      this.tray.notice(gettext("Could not change that conversation."), "error");
      return;
    }
    if (await this.load(this.query, Math.min(MAX_LIMIT, Math.max(PAGE_SIZE, this.shown)))) {
      this.results.querySelector(`[data-conversation-id="${conv.id}"]`)?.closest("li")?.querySelector(".chat-conversation__menu-btn")?.focus();
    }
  }

  /** gettext("Delete all conversations"): two clicks, like a single delete (the second says what it will do). */
  deleteAll() {
    const tray = this.tray;
    const label = gettext("Delete all conversations");
    const del = button(label, async () => {
      if (del.dataset.armed !== "1") {
        del.dataset.armed = "1";
        del.textContent = gettext("Confirm: delete all conversations");
        setTimeout(() => {
          del.dataset.armed = "";
          del.textContent = label;
        }, DISARM_MS);
        return;
      }
      try {
        await tray.api.deleteAllConversations();
      } catch {
        tray.notice(gettext("Could not delete your conversations."), "error");
        return;
      }
      tray.reset();
      this.show();
    }, { cls: "chat-link-btn chat-conversations__delete-all" });
    const download = h("a", { class: "chat-link-btn chat-conversations__download-all", href: tray.api.exportAllUrl(), download: "" },
      gettext("Download all conversations"));
    return h("p", { class: "chat-conversations__footer" }, download, del);
  }

  item(conv) {
    const tray = this.tray;
    const title = conv.title || gettext("Untitled conversation");
    const when = conv.updated_at ? new Date(conv.updated_at) : null;
    const meta = [conv.page ? pageTitle(tray.config, conv.page) : null, when && !Number.isNaN(when.getTime()) ? formatDate(when) : null]
      .filter(Boolean)
      .join(" · ");
    const open = h(
      "button",
      { type: "button", class: "chat-conversation", dataset: { conversationId: String(conv.id) }, onclick: () => tray.loadConversation(conv.id) },
      h("span", { class: "chat-conversation__title" }, title),
      // a search's match in the conversation's messages, what was searched for marked
      conv.snippet ? h("span", { class: "chat-conversation__snippet" }, ...marked(String(conv.snippet), this.query)) : null,
      meta ? h("span", { class: "chat-conversation__meta" }, meta) : null,
    );
    if (conv.id === tray.conversationId) open.setAttribute("aria-current", "true");
    const row = h("li", { class: "chat-conversation-row" }, open);
    // Two clicks to delete: no blocking confirm() dialog, and no loss from one stray click.
    const del = button(gettext("Delete"), async () => {
      if (del.dataset.armed !== "1") {
        del.dataset.armed = "1";
        del.textContent = gettext("Confirm delete");
        setTimeout(() => {
          del.dataset.armed = "";
          del.textContent = gettext("Delete");
        }, DISARM_MS);
        return;
      }
      try {
        await tray.api.deleteConversation(conv.id);
      } catch {
        tray.notice(gettext("Could not delete that conversation."), "error");
        return;
      }
      const list = row.parentElement;
      // the focus was in the row's menu: it goes to the next conversation (or the one before, or the search box)
      const rows = [...this.el.querySelectorAll(".chat-conversation-row")];
      const at = rows.indexOf(row);
      const next = (rows[at + 1] ?? rows[at - 1])?.querySelector(".chat-conversation") ?? this.el.querySelector(".chat-conversations__search");
      row.remove();
      next?.focus();
      this.shown = Math.max(0, this.shown - 1); // the server's list moved up by one: "Show more" skips no one
      if (list && !list.children.length) list.closest(".chat-conversation-group")?.remove(); // no heading over nothing
      if (conv.id === tray.conversationId) tray.reset();
    }, { cls: "chat-menu__item chat-conversation__delete", ariaLabel: interpolate(gettext("Delete conversation: %(title)s"), { title }) });
    const rename = button(gettext("Rename"), () => this.rename(conv, row, open, menu.trigger), { cls: "chat-menu__item chat-conversation__rename", ariaLabel: interpolate(gettext("Rename conversation: %(title)s"), { title }) });
    const [pinText, pinName] = conv.pinned
      ? [gettext("Unpin"), gettext("Unpin conversation: %(title)s")]
      : [gettext("Pin"), gettext("Pin conversation: %(title)s")];
    const pin = button(pinText, () => this.pin(conv, !conv.pinned), { cls: "chat-menu__item chat-conversation__pin", ariaLabel: interpolate(pinName, { title }) });
    const download = h("a", { class: "chat-menu__item chat-conversation__download", href: tray.api.exportUrl(conv.id, "markdown"),
      download: "", "aria-label": interpolate(gettext("Download conversation: %(title)s"), { title }) }, gettext("Download"));
    // one button per row instead of four links: the actions are a menu (Delete's first choice only arms it, so it stays open)
    const menu = actionsMenu(interpolate(gettext("Actions for conversation: %(title)s"), { title }), [rename, pin, download, del], (item) => item !== del);
    row.append(h("div", { class: "chat-conversation__actions" }, menu.trigger, menu.el));
    return row;
  }

  /** Rename in place: an input instead of the title; Enter saves, Escape keeps the old name. */
  rename(conv, row, open, renameButton) {
    const id = `chat-rename-${conv.id}`;
    const input = h("input", { id, class: "chat-input chat-rename-input", type: "text", maxlength: "200", value: conv.title || "" });
    const form = h("form", { class: "chat-rename-form" }, h("label", { for: id, class: "chat-offscreen" }, gettext("Conversation title")), input,
      h("button", { type: "submit", class: "chat-btn chat-btn--primary" }, gettext("Save")));
    const done = (title) => {
      if (title !== null) {
        conv.title = title;
        const renamed = this.item(conv); // every button's name says the new title
        row.replaceWith(renamed);
        renamed.querySelector(".chat-conversation__menu-btn").focus(); // its menu's items say the new title
        return;
      }
      form.replaceWith(open);
      renameButton.hidden = false;
      renameButton.focus();
    };
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const title = input.value.trim();
      const saved = await this.tray.renameConversation(conv.id, title);
      done(saved ? saved.title ?? title : null);
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault(); // the tray stays open
        e.stopPropagation();
        done(null);
      }
    });
    open.replaceWith(form);
    renameButton.hidden = true;
    input.focus();
    input.select();
  }
}

const MORE_ICON = "M5 12h.01M12 12h.01M19 12h.01"; // three dots: more actions

/**
 * A menu button (WAI-ARIA's menu button pattern): `trigger` (aria-haspopup="menu") opens `el` (role=menu) of `items`
 * (role=menuitem). Enter, Space or Down opens it on its first item, Up on its last; Up, Down, Home and End move;
 * Escape closes it and gives the focus back to the trigger, as does choosing an item for which `closes(item)` holds;
 * Tab or a click elsewhere closes it.
 */
export function actionsMenu(label, items, closes = () => true) {
  const id = `chat-menu-${++menus}`;
  const el = h("div", { class: "chat-menu", role: "menu", id, "aria-label": label, hidden: true });
  const trigger = h("button", { type: "button", class: "chat-icon-btn chat-menu-btn chat-conversation__menu-btn", "aria-haspopup": "menu",
    "aria-expanded": "false", "aria-controls": id, "aria-label": label, title: gettext("More actions") }, icon(MORE_ICON, "chat-icon"));
  for (const item of items) {
    item.setAttribute("role", "menuitem");
    item.tabIndex = -1;
    el.append(item);
  }
  const focusItem = (i) => items[(i + items.length) % items.length].focus();
  const outside = (e) => {
    if (!el.contains(e.target) && !trigger.contains(e.target)) close(false);
  };
  const open = (at = 0) => {
    el.hidden = false;
    document.addEventListener("pointerdown", outside, true);
    trigger.setAttribute("aria-expanded", "true");
    // near the bottom of the list, it opens upwards (the list scrolls; the menu must not be cut off)
    const list = trigger.closest(".chat-conversations");
    el.classList.toggle("is-up", Boolean(list) && trigger.getBoundingClientRect().bottom + el.offsetHeight > list.getBoundingClientRect().bottom);
    focusItem(at);
  };
  const close = (refocus = true) => {
    if (el.hidden) return;
    if (refocus) trigger.focus();
    document.removeEventListener("pointerdown", outside, true);
    el.hidden = true;
    trigger.setAttribute("aria-expanded", "false");
  };
  trigger.addEventListener("click", () => (el.hidden ? open(0) : close()));
  trigger.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    open(e.key === "ArrowUp" ? -1 : 0);
  });
  el.addEventListener("keydown", (e) => {
    const at = items.indexOf(document.activeElement);
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: -1 };
    if (e.key in moves) focusItem(moves[e.key]);
    else if (e.key === "Escape") close(); // the menu is the innermost open thing: the tray stays open
    else if (e.key === "Tab") return close(false);
    else if (e.key === " " && document.activeElement?.tagName === "A") document.activeElement.click(); // Space chooses a link item too
    else return;
    e.preventDefault();
    e.stopPropagation();
  });
  el.addEventListener("click", (e) => {
    const item = e.target instanceof Element ? e.target.closest("[role=menuitem]") : null;
    if (item && closes(item)) close(!item.classList.contains("chat-conversation__rename")); // Rename puts the focus in its box
  });
  // the focus going elsewhere closes it (a click elsewhere too, above: a click on an item need not focus it first)
  el.addEventListener("focusout", (e) => {
    if (e.relatedTarget && !el.contains(e.relatedTarget) && e.relatedTarget !== trigger) close(false);
  });
  return { trigger, el };
}

let menus = 0;

/** What people read for a page the conversation was on: its title from the tray config, else its name in words. */
export function pageTitle(config, page) {
  const titles = config?.page_titles;
  const known = titles && Object.hasOwn(titles, page) ? titles[page] : "";
  if (typeof known === "string" && known) return known;
  const words = String(page).replaceAll("_", " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
