/**
 * Suggested actions: built-in client actions and the dispatcher for action buttons.
 * Client actions run in the browser via the registry (page actions first, then these);
 * server actions go back over the socket with their signed token.
 */
import { findClientAction, registerBuiltinClientAction } from "./registry.js";
import { isSameOriginPath, isSameOriginUrl } from "./dom.js";

const HIGHLIGHT_MS = 3000;

const BUILTINS = {
  close(data, { tray }) {
    tray.close();
  },
  cancel(data, { tray }) {
    tray.reset();
    tray.close();
  },
  restart(data, { tray }) {
    tray.newConversation();
  },
  navigate(data, { tray }) {
    // Only same-origin relative paths: a model must not be able to send users elsewhere.
    const route = data?.route;
    if (!isSameOriginPath(route)) throw new ActionError("Refusing to navigate outside this site.");
    window.location.assign(route);
  },
  async copy(data, { tray }) {
    const text = data?.text;
    if (typeof text !== "string") throw new ActionError("Nothing to copy.");
    await copyText(text);
    tray.notice("Copied to clipboard.");
  },
  highlight(data) {
    let el = null;
    try {
      el = typeof data?.selector === "string" ? document.querySelector(data.selector) : null;
    } catch {
      el = null; // an invalid selector is the model's mistake, not a crash
    }
    if (!el) throw new ActionError("Nothing to highlight on this page.");
    el.classList.add("chat-highlight");
    el.scrollIntoView({ block: "center", behavior: "smooth" });
    setTimeout(() => el.classList.remove("chat-highlight"), HIGHLIGHT_MS);
  },
  download(data) {
    if (!isSameOriginUrl(data?.url)) throw new ActionError("Refusing to download from another site.");
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
    tray.notice(`Unknown action: ${action.action}`, "error");
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
      tray.notice(`Action "${action.label}" failed.`, "error");
    }
  }
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Clipboard API needs a secure context and focus; fall back to the old selection trick.
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "chat-offscreen";
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    if (!ok) throw new ActionError("Could not copy to the clipboard.");
  }
}
