/** The conversation list inside the tray: the user's conversations over REST, open or delete. */
import { h, button } from "./dom.js";

const DISARM_MS = 3000;

export class HistoryView {
  constructor(tray) {
    this.tray = tray;
    this.el = h("div", { class: "chat-conversations", hidden: true });
  }

  get isOpen() {
    return !this.el.hidden;
  }

  hide() {
    this.el.hidden = true;
  }

  async show() {
    this.el.hidden = false;
    this.el.replaceChildren(h("p", { class: "chat-muted" }, "Loading…"));
    let items;
    try {
      items = await this.tray.api.listConversations();
    } catch {
      this.el.replaceChildren(h("p", { class: "chat-error-text" }, "Could not load your conversations."));
      return;
    }
    const list = h("ul", { class: "chat-conversation-list", "aria-label": "Your conversations" });
    for (const item of items) list.append(this.item(item));
    this.el.replaceChildren(
      h("h3", { class: "chat-conversations__title" }, "Conversations"),
      items.length ? list : h("p", { class: "chat-muted" }, "No conversations yet."),
    );
    (list.querySelector("button") ?? this.el).focus?.();
  }

  item(conv) {
    const tray = this.tray;
    const title = conv.title || "Untitled conversation";
    const when = conv.updated_at ? new Date(conv.updated_at) : null;
    const meta = [conv.page ? String(conv.page).replaceAll("_", " ") : null, when && !Number.isNaN(when.getTime()) ? when.toLocaleString() : null]
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
    const del = button("Delete", async () => {
      if (del.dataset.armed !== "1") {
        del.dataset.armed = "1";
        del.textContent = "Confirm delete";
        setTimeout(() => {
          del.dataset.armed = "";
          del.textContent = "Delete";
        }, DISARM_MS);
        return;
      }
      try {
        await tray.api.deleteConversation(conv.id);
      } catch {
        tray.notice("Could not delete that conversation.", "error");
        return;
      }
      row.remove();
      if (conv.id === tray.conversationId) tray.reset();
    }, { cls: "chat-link-btn chat-conversation__delete", ariaLabel: `Delete conversation: ${title}` });
    row.append(del);
    return row;
  }
}
