/**
 * The chat tray's entry module (loaded by chat/tray.html): builds the parts and wires them.
 *
 *   protocol.js   the protocol v1 client (socket.js underneath): send, resume, dedupe, resend
 *   store.js      conversation state, persisted per browser tab in sessionStorage
 *   api.js        REST calls (conversations)
 *   controller.js what the user and the page can ask of the tray; reacts to the protocol
 *                 (its features, one module each, in controller/)
 *   view.js ...   the DOM (its parts in view/; with messages.js, live.js, panel.js, history.js)
 *   pagechat.js   the public API for host pages (also window.pagechat); docs/tray.md
 */
import "./pagechat.js"; // the public API, and window.pagechat
import "./payloads.js"; // the fallback card and built-in payload handlers
import "./actions.js"; // the built-in client actions
import { setTray } from "./registry.js";
import { ProtocolClient } from "./protocol.js";
import { ConversationStore, webStorageAdapter } from "./store.js";
import { ChatApi } from "./api.js";
import { Tray } from "./controller.js";

function boot() {
  const root = document.querySelector("[data-chat-tray]");
  const configEl = document.getElementById("chat-tray-config");
  if (!root || !configEl || root.dataset.chatTrayReady) return;
  let config;
  try {
    config = JSON.parse(configEl.textContent);
  } catch (err) {
    console.error("chat tray: bad config", err);
    return;
  }
  if (!config.ws_url || !config.api_base) {
    console.error("chat tray: the config needs ws_url and api_base (the {% chat_tray %} tag provides them)");
    return;
  }
  root.dataset.chatTrayReady = "1";
  const tray = new Tray(root, config, {
    store: new ConversationStore({ storage: webStorageAdapter() }),
    api: new ChatApi(config.api_base, config.csrf_token),
    createProtocol: (hooks, seen) => new ProtocolClient(config.ws_url, hooks, { seen }),
  });
  tray.start();
  setTray(tray);
  tray.view.dispatch("ready", { tray });
}

boot();
