/**
 * Files for the next message: chosen, checked against the server's limits, uploaded, removed, taken by the send.
 * Methods of the tray (controller.js); `this` is the tray.
 */
import { formatNumber, gettext, interpolate, ngettext } from "../i18n.js";

/** "5 MB", "300 KB": a byte count for people. */
export function formatSize(bytes) {
  return bytes >= 1024 * 1024 ? `${formatNumber(Math.round(bytes / (1024 * 1024)))} MB` : `${formatNumber(Math.max(1, Math.round(bytes / 1024)))} KB`;
}

export function attachmentsState() {
  return {
    pending: [], // files chosen for the next message: {key, name, status: "uploading"|"ready", data, preview}
  };
}

export const attachments = {
  /** Upload files for the next message; what the server would refuse is refused here first, with the reason. */
  attach(files) {
    const limits = this.config.attachments;
    if (!limits) return;
    for (const file of files) {
      const name = String(file.name || "pasted image");
      if (this.pending.length >= limits.max_count) {
        this.notice(interpolate(ngettext("A message can carry at most %(count)s file.", "A message can carry at most %(count)s files.", limits.max_count), { count: formatNumber(limits.max_count) }), "error");
        break;
      }
      if (!limits.types.includes(file.type)) {
        this.notice(interpolate(gettext("%(name)s: only images (PNG, JPEG, WebP, GIF) and PDF files can be attached."), { name }), "error");
        continue;
      }
      if (file.size > limits.max_bytes) {
        this.notice(interpolate(gettext("%(name)s is too big: the limit is %(size)s."), { name, size: formatSize(limits.max_bytes) }), "error");
        continue;
      }
      const item = { key: `${Date.now()}-${Math.random()}`, name, status: "uploading", data: null, preview: null };
      this.pending.push(item);
      this.upload(item, file);
    }
    this.showPending();
  },

  async upload(item, file) {
    try {
      item.data = await this.api.uploadAttachment(file);
      item.status = "ready";
    } catch (err) {
      this.pending = this.pending.filter((p) => p !== item);
      this.notice(`${item.name}: ${err.message}`, "error");
    }
    if (item.status === "ready" && !this.pending.includes(item)) this.discard(item); // removed while it uploaded
    this.showPending();
  },

  removeAttachment(item) {
    this.pending = this.pending.filter((p) => p !== item);
    if (item.status === "ready") this.discard(item);
    this.showPending();
  },

  discard(item) {
    this.api.discardAttachment(item.data.id).catch(() => {}); // unsent leftovers are purged anyway
  },

  showPending() {
    this.view.showPending(this.pending, (item) => this.removeAttachment(item));
    this.saveDraft();
  },

  /** The uploaded files' descriptions, now part of the message being sent; the composer's list empties. */
  takePending() {
    const files = this.pending.map((p) => p.data);
    this.pending = [];
    this.showPending();
    return files;
  },
};
