/**
 * DOM helpers. Everything the tray shows is built here with createElement + textContent;
 * the only HTML string ever parsed is the server's sanitized message_html, and even that
 * goes through sanitizeHtml() first.
 */

/**
 * Build an element: h("button", {class: "x", type: "button", onclick: fn}, "label", child).
 * Strings become text nodes; null/false children are skipped; `on*` keys become listeners
 * (real listeners, not attributes, so the strict CSP is satisfied).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "text") {
      el.textContent = value;
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

/** Append children (strings as text nodes, arrays flattened, nullish skipped). */
export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** A real <button type="button"> with a visible label and an optional accessible label. */
export function button(label, onClick, { cls = "", ariaLabel = null, title = null } = {}) {
  return h("button", { type: "button", class: cls, "aria-label": ariaLabel, title, onclick: onClick }, label);
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** A decorative SVG icon from path data (no emoji: headless and minimal systems lack the fonts). */
export function icon(pathData, cls = "chat-icon") {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", cls);
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", pathData);
  svg.append(path);
  return svg;
}

/** Built-in icons by name (stroked 24x24 paths); payload renderers may name one as their `icon`. */
export const ICONS = Object.freeze({
  chat: "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z",
  tool: "M14.7 6.3a4 4 0 0 0-5.4 5.1L3 17.7 6.3 21l6.3-6.3a4 4 0 0 0 5.1-5.4l-2.6 2.6-2.4-.6-.6-2.4z",
  search: "M11 4a7 7 0 1 0 0 14a7 7 0 1 0 0-14zM21 21l-5-5",
  article: "M6 2h9l5 5v15H6zM14 2v6h6M9 13h8M9 17h8",
  form: "M4 4h16v16H4zM8 9h8M8 13h8M8 17h5",
  list: "M8 6h13M8 12h13M8 18h13M3 6h.01M3 12h.01M3 18h.01",
  chart: "M4 20V10M10 20V4M16 20v-8M22 20H2",
  filter: "M3 4h18l-7 9v6l-4 2v-8z",
  check: "M20 6L9 17l-5-5",
  warning: "M12 3l10 18H2zM12 10v5M12 18h.01",
  link: "M10 14a5 5 0 0 0 7 0l3-3a5 5 0 0 0-7-7l-1 1M14 10a5 5 0 0 0-7 0l-3 3a5 5 0 0 0 7 7l1-1",
  globe: "M12 2a10 10 0 1 0 0 20a10 10 0 1 0 0-20zM2 12h20M12 2a15 15 0 0 1 0 20M12 2a15 15 0 0 0 0 20",
  widen: "M3 12h18M7 8l-4 4 4 4M17 8l4 4-4 4",
  data: "M4 6c0-1.7 3.6-3 8-3s8 1.3 8 3-3.6 3-8 3-8-1.3-8-3zM4 6v12c0 1.7 3.6 3 8 3s8-1.3 8-3V6M4 12c0 1.7 3.6 3 8 3s8-1.3 8-3",
});

const PATH_DATA = /^[MmLlHhVvCcSsQqTtAaZz0-9.,\s+-]+$/;

/** Throw a TypeError unless `value` is a built-in icon name, SVG path data or an Element. */
export function checkIcon(value) {
  if (typeof value === "string" && (Object.hasOwn(ICONS, value) || (PATH_DATA.test(value) && /^\s*[Mm]/.test(value)))) return value;
  if (typeof Element !== "undefined" && value instanceof Element) return value;
  throw new TypeError(`pagechat: icon must be one of ${Object.keys(ICONS).join(", ")}, SVG path data, or an Element`);
}

/** The node for an `icon` option (a fresh copy each time), or null. */
export function iconNode(value, cls = "chat-icon") {
  if (value === undefined || value === null) return null;
  if (typeof value === "string") return icon(ICONS[value] ?? value, cls);
  const node = value.cloneNode(true);
  node.setAttribute?.("aria-hidden", "true");
  return node;
}

/**
 * Put text on the clipboard; true when it worked. The Clipboard API needs a secure context and
 * focus; without it, the old selection trick.
 */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "chat-offscreen";
    const focus = document.activeElement;
    document.body.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
    focus?.focus?.();
    return ok;
  }
}

/** Pretty JSON for display as text (never as HTML). */
export function jsonText(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? "";
  } catch {
    return String(value);
  }
}

/** True for same-origin http(s) URLs given as a relative path ("/x", not "//host/x"). */
export function isSameOriginPath(value) {
  if (typeof value !== "string" || !value.startsWith("/") || value.startsWith("//") || value.startsWith("/\\")) {
    return false;
  }
  try {
    return new URL(value, window.location.origin).origin === window.location.origin;
  } catch {
    return false;
  }
}

/** True for a same-origin URL given either as a path or as an absolute http(s) URL. */
export function isSameOriginUrl(value) {
  if (typeof value !== "string" || !value) return false;
  try {
    const url = new URL(value, window.location.href);
    return (url.protocol === "http:" || url.protocol === "https:") && url.origin === window.location.origin;
  } catch {
    return false;
  }
}

const FORBIDDEN_TAGS = new Set([
  "SCRIPT", "IFRAME", "OBJECT", "EMBED", "IMG", "STYLE", "LINK", "META", "BASE", "FORM",
  "INPUT", "BUTTON", "TEXTAREA", "SELECT", "FRAME", "FRAMESET", "SVG", "MATH", "TEMPLATE",
  "AUDIO", "VIDEO", "SOURCE", "PICTURE", "NOSCRIPT",
]);
const URL_ATTRS = new Set(["href", "src", "xlink:href", "action", "formaction", "srcset", "poster", "background"]);
const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/**
 * Parse already-sanitized server HTML into an inert fragment and strip anything active again
 * (defence in depth: the server runs nh3, this protects against a bug or a bypass there).
 * Parsing happens inside a <template>, so nothing loads or runs while we clean it.
 */
export function sanitizeHtml(html) {
  const template = document.createElement("template");
  template.innerHTML = typeof html === "string" ? html : "";
  const fragment = template.content;
  for (const el of [...fragment.querySelectorAll("*")]) {
    if (FORBIDDEN_TAGS.has(el.tagName.toUpperCase())) {
      el.remove();
      continue;
    }
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      if (name.startsWith("on") || name === "style" || name === "srcdoc") {
        el.removeAttribute(attr.name);
      } else if (URL_ATTRS.has(name) && !isSafeUrl(attr.value)) {
        el.removeAttribute(attr.name);
      }
    }
    if (el.tagName === "A" && el.hasAttribute("href") && !isSameOriginUrl(el.getAttribute("href"))) {
      el.setAttribute("target", "_blank");
      el.setAttribute("rel", "noopener noreferrer");
    }
  }
  return document.importNode(fragment, true);
}

function isSafeUrl(value) {
  try {
    return SAFE_PROTOCOLS.has(new URL(value.trim(), window.location.href).protocol);
  } catch {
    return false;
  }
}
