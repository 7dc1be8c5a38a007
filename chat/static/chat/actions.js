/**
 * Suggested actions: built-in client actions and the dispatcher for action buttons.
 * Client actions run in the browser via the registry (page actions first, then these);
 * server actions go back over the socket with their signed token.
 */
import { findClientAction, registerBuiltinClientAction } from "./registry.js";
import { copyText, isSameOriginPath, isSameOriginUrl } from "./dom.js";
import { gettext, interpolate } from "./i18n.js";

const HIGHLIGHT_MS = 3000;

const BUILTINS = {
  close(data, { tray }) {
    tray.close();
  },
  // Cancel discards the proposal on screen, never the conversation (the tray stays open).
  cancel(data, { tray }) {
    tray.discardProposal();
  },
  restart(data, { tray }) {
    tray.newConversation();
  },
  navigate(data, { tray }) {
    // Only same-origin relative paths: a model must not be able to send users elsewhere.
    const route = data?.route;
    if (!isSameOriginPath(route)) throw new ActionError(gettext("Refusing to navigate outside this site."));
    window.location.assign(route);
  },
  async copy(data, { tray }) {
    const text = data?.text;
    if (typeof text !== "string") throw new ActionError(gettext("Nothing to copy."));
    if (!(await copyText(text))) throw new ActionError(gettext("Could not copy to the clipboard."));
    tray.notice(gettext("Copied to clipboard."));
  },
  highlight(data) {
    let el = null;
    try {
      el = typeof data?.selector === "string" ? document.querySelector(data.selector) : null;
    } catch {
      el = null; // an invalid selector is the model's mistake, not a crash
    }
    if (!el) throw new ActionError(gettext("Nothing to highlight on this page."));
    el.classList.add("chat-highlight");
    el.scrollIntoView({ block: "center", behavior: "smooth" });
    setTimeout(() => el.classList.remove("chat-highlight"), HIGHLIGHT_MS);
  },
  download(data) {
    if (!isSameOriginUrl(data?.url)) throw new ActionError(gettext("Refusing to download from another site."));
    const link = document.createElement("a");
    link.href = data.url;
    link.download = typeof data.filename === "string" ? data.filename : "";
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
  },
};

for (const [name, fn] of Object.entries(BUILTINS)) registerBuiltinClientAction(name, fn);

/** An expected refusal whose message is safe to show the user. */
export class ActionError extends Error {}

/**
 * Run one suggested action. Never throws: failures become a small notice in the tray.
 * @param {{label, action, handler, data, token}} action
 */
export async function runSuggestedAction(action, tray) {
  if (action.handler === "server") {
    // the server acts on the proposal now: a preview still open in the panel would go stale
    if (tray.panel?.isOpen) tray.panel.close();
    tray.send(action.label, "action_executed", {
      action_identifier: action.action,
      action_data: action.data ?? null,
      token: action.token ?? null,
    });
    return;
  }
  const fn = findClientAction(action.action);
  if (!fn) {
    tray.notice(interpolate(gettext("Unknown action: %(action)s"), { action: action.action }), "error");
    return;
  }
  const ctx = {
    tray,
    action,
    send: (message, interactionType = "text_input", actionMetadata = null) =>
      tray.send(message, interactionType, actionMetadata),
  };
  try {
    await fn(action.data ?? {}, ctx);
  } catch (err) {
    if (err instanceof ActionError) {
      tray.notice(err.message, "error"); // an expected refusal, not a bug
    } else {
      console.error(`chat tray: client action ${action.action} failed`, err);
      tray.notice(interpolate(gettext("Action “%(label)s” failed."), { label: action.label }), "error");
    }
  }
}
