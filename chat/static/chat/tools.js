/**
 * Frontend tools and the page's shared state (docs/tray.md, "Frontend tools and page state"): the tools a page
 * registers (offered to the model with every chat.send of this tab, run by this tab alone), the tab's id, and the
 * state the page publishes and the server's tools may change. Hosts use them through chat/pagechat.js (or
 * `window.pagechat`); the tray's controller (controller/tools.js) runs the calls.
 *
 * No DOM but the window event "pagechat:state" (guarded), so it runs under Node's test runner. Like registry.js, the
 * browser evaluates it once per URL: a page's module and the tray see the same registry.
 */
import { uuid4 } from "./protocol.js";

/** This page load's own id: a run's `client_tool_call` names the tab that sent its turn (only that tab runs it). */
export const TAB_ID = uuid4();

export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const MAX_TOOLS = 16;
export const MAX_TITLE = 80;
export const MAX_DESCRIPTION = 1000;
export const MAX_PARAMETERS_BYTES = 8192;
export const MAX_OUTPUT = 20000;
export const MAX_STATE_BYTES = 16384; // the state, and a tool's payload, as JSON
export const MAX_ERROR = 300;

const tools = new Map(); // name -> {name, title, description, parameters, requiresApproval, handler}
let pageState = {};
const stateListeners = new Set();

const SPEC_KEYS = new Set(["name", "title", "description", "parameters", "handler", "requiresApproval"]);

function fail(message) {
  throw new Error(`pagechat: ${message}`);
}

/** Plain data (what JSON carries): an object that is not an array. */
function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The UTF-8 size of a value as JSON; null when it is not JSON (a cycle, a BigInt). */
function jsonBytes(value) {
  try {
    return new TextEncoder().encode(JSON.stringify(value)).length;
  } catch {
    return null;
  }
}

/**
 * Register a frontend tool: the model may call it during this tab's turns, and this tab runs `handler`.
 *
 * @param {{name: string, title?: string, description?: string, parameters?: object,
 *          handler: (args: object, ctx: {tray}) => (string|{text: string, payload?: object}|Promise<...>),
 *          requiresApproval?: boolean}} spec
 *   name: ^[a-zA-Z0-9_-]{1,64}$ (what the model calls); title: what people read on its card (<= 80 characters;
 *   else the server derives one from the name); description: what the model reads (<= 1000); parameters: a JSON
 *   Schema object for its arguments (<= 8 KB as JSON); requiresApproval: the person approves each call first.
 *   Registering a name again replaces that tool. At most 16 tools.
 * @returns {() => boolean} unregisters this tool
 */
export function registerTool(spec) {
  if (!isPlainObject(spec)) fail("registerTool takes one object: {name, title, description, parameters, handler, requiresApproval}");
  const { name, title = null, description = "", parameters = { type: "object", properties: {} }, handler, requiresApproval = false } = spec;
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    fail(`a tool name is 1 to 64 letters, digits, "_" or "-" (got ${JSON.stringify(name)})`);
  }
  const unknown = Object.keys(spec).filter((key) => !SPEC_KEYS.has(key));
  if (unknown.length) fail(`unknown key(s) for the tool ${name}: ${unknown.join(", ")}`);
  if (typeof handler !== "function") fail(`the handler of the tool ${name} must be a function (args, {tray}) => result`);
  if (title !== null && (typeof title !== "string" || !title.trim() || title.length > MAX_TITLE)) {
    fail(`the title of the tool ${name} must be a non-empty string of at most ${MAX_TITLE} characters`);
  }
  if (typeof description !== "string" || description.length > MAX_DESCRIPTION) {
    fail(`the description of the tool ${name} must be a string of at most ${MAX_DESCRIPTION} characters`);
  }
  if (!isPlainObject(parameters) || (parameters.type ?? "object") !== "object") {
    fail(`the parameters of the tool ${name} must be a JSON Schema object ({"type": "object", "properties": {...}})`);
  }
  const size = jsonBytes(parameters);
  if (size === null || size > MAX_PARAMETERS_BYTES) fail(`the parameters of the tool ${name} must be JSON of at most ${MAX_PARAMETERS_BYTES} bytes`);
  if (typeof requiresApproval !== "boolean") fail(`requiresApproval of the tool ${name} must be true or false`);
  if (!tools.has(name) && tools.size >= MAX_TOOLS) fail(`at most ${MAX_TOOLS} tools per page (${[...tools.keys()].join(", ")})`);
  const tool = { name, title: title?.trim() || null, description, parameters: JSON.parse(JSON.stringify(parameters)), requiresApproval, handler };
  tools.set(name, tool);
  return () => (tools.get(name) === tool ? tools.delete(name) : false);
}

/** Remove a registered tool; false when there was none of that name. */
export function unregisterTool(name) {
  return tools.delete(name);
}

/** The registered tool of that name, or null. */
export function findTool(name) {
  return tools.get(name) ?? null;
}

/** The registered tools as chat.send's `client_tools` carries them. */
export function clientToolDefinitions() {
  return [...tools.values()].map((tool) => {
    const definition = { name: tool.name, description: tool.description, parameters: tool.parameters, requires_approval: tool.requiresApproval };
    if (tool.title) definition.title = tool.title;
    return definition;
  });
}

// ---- the page's state ---------------------------------------------------------------------------

function copy(value) {
  return JSON.parse(JSON.stringify(value));
}

/**
 * Publish the page's state (sent with each message as `state`; the model reads it as data). Keys are merged into the
 * state (a null or undefined value removes its key); `{replace: true}` replaces the whole state. Plain JSON data, at
 * most 16 KB. Returns the new state.
 */
export function setState(values, { replace = false } = {}) {
  if (!isPlainObject(values)) fail("setState takes an object");
  const next = replace ? {} : { ...pageState };
  for (const [key, value] of Object.entries(values)) {
    if (value === null || value === undefined) delete next[key];
    else next[key] = value;
  }
  const size = jsonBytes(next);
  if (size === null) fail("the state must be plain JSON data");
  if (size > MAX_STATE_BYTES) fail(`the state must be at most ${MAX_STATE_BYTES} bytes as JSON (it would be ${size})`);
  pageState = copy(next);
  return copy(pageState);
}

/** The page's state (a copy). */
export function getState() {
  return copy(pageState);
}

/**
 * Call `fn(state, delta)` whenever the state changes from outside the page's own setState (a `state` event of a run:
 * a tool changed it). Returns a function that removes the listener.
 */
export function onState(fn) {
  if (typeof fn !== "function") fail("onState takes a function (state, delta) => void");
  stateListeners.add(fn);
  return () => stateListeners.delete(fn);
}

/** A run's `state` event: the state is replaced, onState listeners are called and "pagechat:state" is dispatched. */
export function applyState(state, delta = []) {
  if (!isPlainObject(state)) return false;
  pageState = copy(state);
  const patch = Array.isArray(delta) ? delta : [];
  for (const fn of [...stateListeners]) {
    try {
      fn(copy(pageState), patch);
    } catch (err) {
      console.error("pagechat: an onState listener failed", err);
    }
  }
  if (typeof window !== "undefined" && typeof window.dispatchEvent === "function" && typeof CustomEvent === "function") {
    window.dispatchEvent(new CustomEvent("pagechat:state", { detail: { state: copy(pageState), delta: patch } }));
  }
  return true;
}

// ---- running a call -----------------------------------------------------------------------------

/** The text of a handler's failure for the model: "the handler failed: <message>", at most 300 characters. */
export function failureOutput(err) {
  const message = err instanceof Error ? err.message : String(err);
  return `the handler failed: ${message}`.slice(0, MAX_ERROR);
}

/**
 * What a handler returned, as chat.tool_result's fields {output, is_error, payload}: a string is the output; {text,
 * payload} the output and a payload card; nothing is "done". Too long an output, or too large a payload, is an error.
 */
export function resultOf(value) {
  let output;
  let payload = null;
  if (typeof value === "string") output = value;
  else if (value === undefined || value === null) output = "done";
  else if (isPlainObject(value)) {
    output = typeof value.text === "string" ? value.text : value.text === undefined || value.text === null ? "done" : String(value.text);
    if (value.payload !== undefined && value.payload !== null) {
      if (!isPlainObject(value.payload)) return { output: "the handler returned a payload that is not an object", is_error: true, payload: null };
      const size = jsonBytes(value.payload);
      if (size === null || size > MAX_STATE_BYTES) {
        return { output: `the handler returned a payload larger than ${MAX_STATE_BYTES} bytes`, is_error: true, payload: null };
      }
      payload = copy(value.payload);
    }
  } else output = String(value);
  if (output.length > MAX_OUTPUT) return { output: `the handler returned more than ${MAX_OUTPUT} characters`, is_error: true, payload: null };
  return { output, is_error: false, payload };
}

/** Forget every tool and the state (tests). */
export function resetTools() {
  tools.clear();
  pageState = {};
  stateListeners.clear();
}
