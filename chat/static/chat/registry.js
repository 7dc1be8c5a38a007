/**
 * The tray's registries: payload renderers, client actions, the page context and the tray
 * controller itself. Hosts use them through chat/pagechat.js (or `window.pagechat`), which
 * documents the public functions; docs/tray.md has the guide.
 *
 * Payload renderer lookup, first hit wins:
 *   1. page handlers      registerPayloadHandler / registerPageHandlers (one page's scripts)
 *   2. site renderers     registerPayloadRenderer (a host's own static JS, any page)
 *   3. built-ins          payloads.js (tool_history)
 *   4. none: the panel shows the generic fallback card (payloads.js).
 * Client action lookup: page actions first, then the built-ins (actions.js).
 *
 * Page scripts may load before or after tray.js: every registry lives in this module, which
 * the browser evaluates once per URL, so both sides always see the same maps.
 */
import { checkIcon } from "./dom.js";

const pagePayloadHandlers = new Map();
const sitePayloadHandlers = new Map();
const builtinPayloadHandlers = new Map();
const pageClientActions = new Map();
const builtinClientActions = new Map();
const pageContext = {};
const readyCallbacks = [];
let tray = null;

/** What a handler may carry (the `options` of registerPayloadRenderer are the first five). */
const RENDERER_OPTIONS = new Set(["title", "icon", "width", "onAccept", "onReject"]);
const HANDLER_KEYS = new Set([...RENDERER_OPTIONS, "render", "panel", "augment"]);

/**
 * Register the renderer of a payload type for every page (a host's own static JS calls this).
 *
 * @param {string} type  the payload type, as registered on the server
 * @param {(data, payload) => Node} renderer  builds the card with DOM APIs (payload data is
 *   model/tool output: textContent, never innerHTML)
 * @param {{title?: string, icon?: string|Node, width?: string,
 *          onAccept?: (data, payload) => any, onReject?: (data, payload) => any}} options
 *   title: the panel heading and the "View <title>" button; icon: a built-in icon name or SVG
 *   path data (24x24) shown before the title; width: a CSS width for the panel on wide screens;
 *   onAccept / onReject: show Accept / Reject buttons; returning false (or a promise of false)
 *   keeps the panel open and the outcome unrecorded.
 */
export function registerPayloadRenderer(type, renderer, options = {}) {
  const key = checkType(type);
  if (typeof renderer !== "function") throw new TypeError(`pagechat: the renderer of ${key} must be a function (data, payload) => Node`);
  if (options === null || typeof options !== "object") throw new TypeError(`pagechat: the options of ${key} must be an object`);
  const unknown = Object.keys(options).filter((name) => !RENDERER_OPTIONS.has(name));
  if (unknown.length) throw new TypeError(`pagechat: unknown option(s) for ${key}: ${unknown.join(", ")}`);
  sitePayloadHandlers.set(key, checkHandler(key, { ...options, render: renderer }));
}

/** Register a page's payload handlers and client actions in one call. */
export function registerPageHandlers({ payloadHandlers = {}, clientActions = {} } = {}) {
  for (const [type, handler] of Object.entries(payloadHandlers)) registerPayloadHandler(type, handler);
  for (const [name, fn] of Object.entries(clientActions)) registerClientAction(name, fn);
}

/**
 * Register one page payload handler (wins over registerPayloadRenderer and the built-ins):
 * {render, title, icon, width, onAccept, onReject} as registerPayloadRenderer takes them, or
 * {panel: false, augment(message, data)} to fold the payload into the message instead.
 */
export function registerPayloadHandler(type, handler) {
  const key = checkType(type);
  pagePayloadHandlers.set(key, checkHandler(key, handler));
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

/** The handler for a payload type (page, then site, then built-in), or null. */
export function findPayloadHandler(type) {
  return pagePayloadHandlers.get(type) || sitePayloadHandlers.get(type) || builtinPayloadHandlers.get(type) || null;
}

/** Look up a client action: page actions first, then the built-ins. */
export function findClientAction(name) {
  return pageClientActions.get(name) || builtinClientActions.get(name) || null;
}

// ---- used by the tray's own modules -----------------------------------------------------------

/** Register a handler shipped with the tray (payloads.js). */
export function registerBuiltinPayloadHandler(type, handler) {
  builtinPayloadHandlers.set(type, handler);
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

function checkType(type) {
  if (typeof type !== "string" || !type) throw new TypeError("pagechat: a payload type must be a non-empty string");
  return type;
}

/** Mistakes in a handler are errors at registration, not a broken panel later. */
function checkHandler(type, handler) {
  if (handler === null || typeof handler !== "object") throw new TypeError(`pagechat: the handler of ${type} must be an object`);
  // A handler object may carry helpers of its own (used through `this`); say so, do not refuse.
  const unknown = Object.keys(handler).filter((name) => !HANDLER_KEYS.has(name));
  if (unknown.length) console.warn(`pagechat: the handler of ${type} has key(s) the tray does not use: ${unknown.join(", ")}`);
  for (const name of ["render", "onAccept", "onReject", "augment"]) {
    if (handler[name] !== undefined && typeof handler[name] !== "function") throw new TypeError(`pagechat: ${name} of ${type} must be a function`);
  }
  for (const name of ["title", "width"]) {
    if (handler[name] !== undefined && typeof handler[name] !== "string") throw new TypeError(`pagechat: ${name} of ${type} must be a string`);
  }
  if (handler.icon !== undefined) checkIcon(handler.icon);
  return handler;
}
