/** "Your preferences" in the conversation list: what the user wants every answer to take into account, in their own
 * words (ChatGPT's custom instructions), read and saved over REST (`<api>preferences/`). */
import { h, button } from "./dom.js";
import { formatNumber, gettext, interpolate } from "./i18n.js";

export class PreferencesForm {
  /**
   * @param {object} tray  the tray controller (its api, notice and config)
   * @param {() => void} onClose  called after Save or Cancel (the list gets focus back)
   */
  constructor(tray, onClose) {
    this.tray = tray;
    this.onClose = onClose;
    this.max = Number(tray.config.max_preference_chars) || 1500;
    const id = "chat-preferences-text";
    this.text = h("textarea", { id, class: "chat-input chat-preferences__text", rows: "5", maxlength: String(this.max),
      "aria-describedby": "chat-preferences-help chat-preferences-count", disabled: true });
    this.count = h("span", { id: "chat-preferences-count", class: "chat-muted", "aria-live": "polite" });
    this.text.addEventListener("input", () => this.counted());
    this.save = button(gettext("Save"), () => this.submit(), { cls: "chat-btn chat-btn--primary" });
    this.save.disabled = true;
    this.el = h("form", { class: "chat-preferences", "aria-labelledby": "chat-preferences-title", onsubmit: (e) => { e.preventDefault(); this.submit(); } },
      h("h3", { id: "chat-preferences-title", class: "chat-conversations__title" }, gettext("Your preferences")),
      h("label", { for: id }, gettext("What should the assistant know about you, or keep in mind in every answer?")),
      this.text,
      h("p", { id: "chat-preferences-help", class: "chat-muted" },
        gettext("Sent to the model with every message you write, on every page."), " ", this.count),
      h("div", { class: "chat-preferences__actions" },
        this.save, button(gettext("Cancel"), () => this.onClose(), { cls: "chat-btn chat-btn--secondary" })),
    );
  }

  counted() {
    this.count.textContent = interpolate(gettext("%(count)s / %(max)s characters"), { count: formatNumber(this.text.value.length), max: formatNumber(this.max) });
  }

  /** Read the saved preferences into the form, then focus it; false when they could not be read. */
  async load() {
    try {
      const data = await this.tray.api.getPreferences();
      this.text.value = String(data?.instructions ?? "");
    } catch {
      this.tray.notice(gettext("Could not load your preferences."), "error");
      return false;
    }
    this.text.disabled = false;
    this.save.disabled = false;
    this.counted();
    this.text.focus();
    return true;
  }

  async submit() {
    if (this.save.disabled) return;
    this.save.disabled = true;
    try {
      await this.tray.api.setPreferences(this.text.value);
    } catch {
      this.save.disabled = false;
      this.tray.notice(gettext("Could not save your preferences."), "error");
      return;
    }
    this.tray.notice(gettext("Preferences saved. They apply from your next message."), "info");
    this.onClose();
  }
}
