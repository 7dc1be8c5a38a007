/**
 * Chat tray registry: the public API pages use to teach the tray what they can do.
 *
 *   import { registerPageHandlers, registerPayloadHandler, registerClientAction,
 *            setContext, getTray, onTrayReady } from "/static/chat/registry.js";
 *
 *   registerPageHandlers({
 *     payloadHandlers: {
 *       schema_proposal: {
 *         title: "Schema Proposal",          // panel header (defaults to the payload type)
 *         width: "480px",                    // panel width on wide screens
 *         render(data, payload) { return someHTMLElement; },  // build with DOM APIs, never innerHTML
 *         onAccept(data, payload) { ... },   // optional: shows an Accept button; return false if not applied
 *         onReject(data, payload) { ... },   // optional: shows a Reject button (panel stays open and the
 *                                            //   outcome unrecorded when it returns false)
 *       },
 *     },
 *     clientActions: {
 *       switch_tab(data, ctx) { ... },       // ctx = {tray, send(message, interactionType, actionMetadata), action}
 *     },
 *   });
 *   setContext({ active_tab: "retrieval" });  // merged into the context sent with the next message
 *   getTray();                                // the live tray controller, or null before tray.js ran
 *   onTrayReady(tray => ...);                 // runs now, or once the tray exists
 *
 * The tray controller offers: open(), close(), toggle(), send(message, interactionType =
 * "text_input", actionMetadata = null), newConversation(), reset(), notice(text, kind),
 * openPayload(customPayload), loadConversation(id).
 *
 * Payload handler lookup: page handlers first, then global ones (payloads.js ships
 * search_results, pubmed_article, article, tool_history). A handler with `panel: false`
 * never opens the floating panel; it may define `augment(message, data)` to fold its data
 * into the message instead (tool_history does this).
 *
 * Page scripts may load before or after tray.js: every registry lives in this module, which
 * the browser evaluates once per URL, so both sides always see the same maps.
 */

const pagePayloadHandlers = new Map();
const globalPayloadHandlers = new Map();
const pageClientActions = new Map();
const builtinClientActions = new Map();
const pageContext = {};
const readyCallbacks = [];
let tray = null;

/** Register a page's payload handlers and client actions in one call. */
export function registerPageHandlers({ payloadHandlers = {}, clientActions = {} } = {}) {
  for (const [type, handler] of Object.entries(payloadHandlers)) registerPayloadHandler(type, handler);
  for (const [name, fn] of Object.entries(clientActions)) registerClientAction(name, fn);
}

/** Register one page payload handler (wins over a global handler of the same type). */
export function registerPayloadHandler(type, handler) {
  pagePayloadHandlers.set(String(type), handler);
}

/** Register one page client action (wins over a built-in of the same name). */
export function registerClientAction(name, fn) {
  if (typeof fn !== "function") throw new TypeError(`client action ${name} must be a function`);
  pageClientActions.set(String(name), fn);
}

/** Merge keys into the context sent with every following message; a null value removes a key. */
export function setContext(values) {
  for (const [key, value] of Object.entries(values || {})) {
    if (value === null || value === undefined) delete pageContext[key];
    else pageContext[key] = value;
  }
}

/** The page context set so far (a copy, so callers cannot mutate the registry by accident). */
export function getContext() {
  return { ...pageContext };
}

/** The tray controller once tray.js has started, else null. */
export function getTray() {
  return tray;
}

/** Run `callback(tray)` as soon as the tray exists (immediately if it already does). */
export function onTrayReady(callback) {
  if (tray) callback(tray);
  else readyCallbacks.push(callback);
}

/** Look up the handler for a payload type: page handlers first, then the global registry. */
export function findPayloadHandler(type) {
  return pagePayloadHandlers.get(type) || globalPayloadHandlers.get(type) || null;
}

/** Look up a client action: page actions first, then the built-ins. */
export function findClientAction(name) {
  return pageClientActions.get(name) || builtinClientActions.get(name) || null;
}

// ---- used by the tray's own modules -----------------------------------------------------------

/** Register a handler shipped with the tray (payloads.js). */
export function registerGlobalPayloadHandler(type, handler) {
  globalPayloadHandlers.set(type, handler);
}

/** Register a client action shipped with the tray (actions.js). */
export function registerBuiltinClientAction(name, fn) {
  builtinClientActions.set(name, fn);
}

/** Called once by tray.js when the controller is built. */
export function setTray(instance) {
  tray = instance;
  for (const callback of readyCallbacks.splice(0)) {
    try {
      callback(instance);
    } catch (err) {
      console.error("chat tray: onTrayReady callback failed", err);
    }
  }
}
