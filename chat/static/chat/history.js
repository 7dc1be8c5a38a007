/** The conversation list inside the tray: the user's conversations over REST, a page at a time, searchable by their
 * titles and messages; open, rename, download or delete (one or all). */
import { h, button } from "./dom.js";
import { formatDate, gettext, interpolate } from "./i18n.js";

const DISARM_MS = 3000;
const PAGE_SIZE = 50; // conversations per request: a long history is listed a part at a time
const SEARCH_DELAY_MS = 250; // one search per pause in typing, not one per key

export class HistoryView {
  constructor(tray) {
    this.tray = tray;
    this.el = h("div", { class: "chat-conversations", hidden: true });
    this.generation = 0; // the latest list asked for: an older answer that arrives later is dropped
    this.searchTimer = null;
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
    this.el.replaceChildren(
      h("h3", { class: "chat-conversations__title" }, gettext("Conversations")),
      h("form", { class: "chat-conversations__search-form", role: "search", onsubmit: (e) => { e.preventDefault(); find(); } },
        h("label", { for: id, class: "chat-offscreen" }, gettext("Search conversations")), search),
      this.results,
    );
    if (await this.load("")) (this.results.querySelector("button") ?? this.el).focus?.();
  }

  /** List the first page of the conversations that match `query` (all when empty); false if a newer list replaced it. */
  async load(query) {
    const generation = ++this.generation;
    let items;
    try {
      items = await this.tray.api.listConversations({ q: query, limit: PAGE_SIZE });
    } catch {
      if (generation !== this.generation) return false;
      this.results.replaceChildren(h("p", { class: "chat-error-text" }, gettext("Could not load your conversations.")));
      return true;
    }
    if (generation !== this.generation) return false;
    const list = h("ul", { class: "chat-conversation-list", "aria-label": gettext("Your conversations") });
    for (const item of items) list.append(this.item(item));
    const none = query ? interpolate(gettext("No conversations match “%(query)s”."), { query }) : gettext("No conversations yet.");
    this.results.replaceChildren(...[ // replaceChildren would show a null as the text "null"
      items.length ? list : h("p", { class: "chat-muted", role: "status" }, none),
      items.length === PAGE_SIZE ? this.more(list, query, PAGE_SIZE) : null,
      items.length && !query ? this.deleteAll() : null, // "all" means all: not offered over a filtered list
    ].filter(Boolean));
    return true;
  }

  /** gettext("Show more"): the next page of the same list, appended (a conversation already listed is not repeated). */
  more(list, query, offset) {
    const generation = this.generation;
    const row = h("p", { class: "chat-conversations__more" });
    const more = button(gettext("Show more"), async () => {
      more.disabled = true;
      let items;
      try {
        items = await this.tray.api.listConversations({ q: query, limit: PAGE_SIZE, offset });
      } catch {
        more.disabled = false;
        this.tray.notice(gettext("Could not load your conversations."), "error");
        return;
      }
      if (generation !== this.generation) return; // the list was searched or reloaded meanwhile
      const listed = new Set([...list.querySelectorAll(".chat-conversation")].map((b) => b.dataset.conversationId));
      const added = items.filter((item) => !listed.has(String(item.id))).map((item) => this.item(item));
      list.append(...added);
      if (items.length === PAGE_SIZE) row.replaceWith(this.more(list, query, offset + PAGE_SIZE));
      else row.remove();
      (added[0]?.querySelector("button") ?? list).focus?.();
    }, { cls: "chat-link-btn" });
    row.append(more);
    return row;
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
    return h("p", { class: "chat-conversations__footer" }, del);
  }

  item(conv) {
    const tray = this.tray;
    const title = conv.title || gettext("Untitled conversation");
    const when = conv.updated_at ? new Date(conv.updated_at) : null;
    const meta = [conv.page ? String(conv.page).replaceAll("_", " ") : null, when && !Number.isNaN(when.getTime()) ? formatDate(when) : null]
      .filter(Boolean)
      .join(" · ");
    const open = h(
      "button",
      { type: "button", class: "chat-conversation", dataset: { conversationId: String(conv.id) }, onclick: () => tray.loadConversation(conv.id) },
      h("span", { class: "chat-conversation__title" }, title),
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
      row.remove();
      if (conv.id === tray.conversationId) tray.reset();
    }, { cls: "chat-link-btn chat-conversation__delete", ariaLabel: interpolate(gettext("Delete conversation: %(title)s"), { title }) });
    const rename = button(gettext("Rename"), () => this.rename(conv, row, open, rename), { cls: "chat-link-btn chat-conversation__rename", ariaLabel: interpolate(gettext("Rename conversation: %(title)s"), { title }) });
    const download = h("a", { class: "chat-link-btn chat-conversation__download", href: tray.api.exportUrl(conv.id, "markdown"),
      download: "", "aria-label": interpolate(gettext("Download conversation: %(title)s"), { title }) }, gettext("Download"));
    row.append(rename, download, del);
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
        open.querySelector(".chat-conversation__title").textContent = title || gettext("Untitled conversation");
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

