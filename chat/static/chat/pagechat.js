/**
 * The tray's public JavaScript API (docs/tray.md). Two ways in, the same functions:
 *
 *   // an ES module of the host (its URL relative to this file's, e.g. from /static/myapp/x.js):
 *   import { registerPayloadRenderer } from "../chat/pagechat.js";
 *
 *   // any script that runs after the tray's module (e.g. a `defer` script after the tray tag),
 *   // or inside a "pagechat:ready" listener:
 *   window.pagechat.registerPayloadRenderer("my_type", (data, payload) => node, { title: "Mine" });
 *
 * registerPayloadRenderer(type, renderer, options)  a card for a payload type (options: title,
 *                                                   icon, width, onAccept, onReject)
 * registerClientAction(name, fn)                    a client action fn(data, {tray, send, action})
 * registerPageHandlers({payloadHandlers, clientActions})  several at once, for one page
 * registerPayloadHandler(type, handler)             one page handler (wins over renderers)
 * setContext(values)                                merged into the context of the next messages
 * getTray() / onTrayReady(callback)                 the tray controller (open, close, send, ...)
 * ICONS                                             the built-in icon names
 * registerTool({name, title, description, parameters, handler, requiresApproval})
 *                                                   a frontend tool the model may call; this tab runs handler(args, {tray})
 * unregisterTool(name)                              remove it
 * setState(values, {replace}) / getState()          the page's shared state, sent with every message
 * onState(fn)                                       fn(state, delta) when a tool changed the state
 *
 * Events, dispatched on the tray's root element and bubbling to `document`:
 *   "pagechat:ready" {tray}, "pagechat:reply" {message}, "pagechat:payload-outcome" {payload, outcome},
 *   "pagechat:action-result" {result, message}, "pagechat:refresh" {action, message}.
 * And on `window`: "pagechat:state" {state, delta} (a tool changed the page's state).
 */
import {
  getContext,
  getTray,
  onTrayReady,
  registerClientAction,
  registerPageHandlers,
  registerPayloadHandler,
  registerPayloadRenderer,
  setContext,
} from "./registry.js";
import { ICONS } from "./dom.js";
import { getState, onState, registerTool, setState, unregisterTool } from "./tools.js";

export {
  getContext,
  getTray,
  onTrayReady,
  registerClientAction,
  registerPageHandlers,
  registerPayloadHandler,
  registerPayloadRenderer,
  setContext,
  registerTool,
  unregisterTool,
  setState,
  getState,
  onState,
  ICONS,
};

/** The same API as a global, for hosts without ES modules of their own. */
export const api = Object.freeze({
  getContext,
  getTray,
  onTrayReady,
  registerClientAction,
  registerPageHandlers,
  registerPayloadHandler,
  registerPayloadRenderer,
  setContext,
  registerTool,
  unregisterTool,
  setState,
  getState,
  onState,
  ICONS,
});

if (typeof window !== "undefined" && !window.pagechat) window.pagechat = api;
