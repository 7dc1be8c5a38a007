/**
 * Model text -> safe DOM, for the live stream and the final message alike (one pipeline, so an
 * answer does not change shape when it completes): marked (GitHub-flavoured markdown, vendored
 * in ./vendor/ with its licence) renders, DOMPurify (vendored too) sanitizes with an allowlist
 * that mirrors the server's (chat/rendering.py): no raw HTML, no images, no styles, no scripts.
 * `[[tool:N]]` markers become whatever `toolSlot(index)` returns; code blocks get a Copy button and colours
 * (highlight.js, vendored too, loaded the first time an answer has code): in a final answer every block, in the live
 * stream every block whose closing fence has arrived (the one still growing stays plain until it closes). Math
 * ($...$, \(...\), $$...$$, \[...\], as chat/rendering.py marks it) is typeset by KaTeX (vendored, loaded the
 * first time an answer has math) as MathML, which the browser lays out without fonts or styles of ours.
 */
import { Marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.js";
import { h, isSameOriginUrl } from "./dom.js";
import { gettext } from "./i18n.js";

const MARKER = /^\[\[tool:(\d{1,6})\]\]/;
// A marker cut in half at the end of the live stream ("[[to"), held back until it completes.
const PARTIAL_MARKER = /\[(?:\[(?:t(?:o(?:o(?:l(?::\d*)?)?)?)?)?)?$/;

const ALLOWED_TAGS = [
  "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "s", "del", "code", "pre",
  "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "div", "span",
];
const ALLOWED_ATTR = ["href", "title", "start", "class", "align", "data-tool-index"];
const UNSAFE_SCHEME = /^(?!(?:https?|mailto):)[a-z][a-z0-9+.-]*:/i;
const LANGUAGE_CLASS = /^language-[A-Za-z0-9_+#.-]{1,40}$/;

const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

// Whether each fenced code block of the text being rendered is closed, in document order (filled by the `code`
// renderer below, read by renderText; rendering is synchronous, so one list serves every call).
let fencesClosed = [];
const CLOSING_FENCE = { "`": /\n {0,3}`{3,}[ \t]*\n*$/, "~": /\n {0,3}~{3,}[ \t]*\n*$/ };

// Math as models write it (the same rules as chat/rendering.py): $$...$$ and \[...\] displayed, $...$ and \(...\)
// inline; a single $ opens only before a non-space and closes only after one, not before a digit ("$5 and $10").
const INLINE_MATH = /^(?:\$\$(?!\$)([^$]+?)\$\$|\\\[([\s\S]+?)\\\]|\$(?![\s$])((?:\\.|[^\\$\n])+?)(?<!\s)\$(?!\d)|\\\(([\s\S]+?)\\\))/;
const BLOCK_MATH = /^ {0,3}(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n+|$)/;

/** Where the next line opening with $$ or \[ starts (marked ends a paragraph there), or undefined. */
function mathBlockStart(src) {
  // indexOf, not a multiline regex: marked asks once per paragraph, and the regex doubled a long answer's parse time
  let found;
  for (const open of ["$$", "\\["]) {
    for (let i = src.indexOf(open); i >= 0 && (found === undefined || i < found); i = src.indexOf(open, i + 1)) {
      const line = src.lastIndexOf("\n", i - 1) + 1;
      if (i - line <= 3 && src.slice(line, i).trim() === "") {
        found = line;
        break;
      }
    }
  }
  return found;
}

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
  renderer: {
    // Note whether the block is closed (a live stream's last block may still be growing); marked renders it.
    code(token) {
      const opener = token.raw.trimStart()[0];
      fencesClosed.push(token.codeBlockStyle !== "indented" && Boolean(CLOSING_FENCE[opener]?.test(token.raw)));
      return false;
    },
    // Raw HTML in model text is shown as text, never parsed (as on the server: markdown-it with html off).
    html({ text }) {
      return escapeHtml(text);
    },
    // A link to anything but http(s), mailto or this site stays literal text (as markdown-it does).
    link(token) {
      return UNSAFE_SCHEME.test(token.href || "") ? escapeHtml(token.raw) : false;
    },
    // No images: a remote image leaks the reader's address and page to whoever hosts it.
    image({ text }) {
      return escapeHtml(text);
    },
  },
  extensions: [
    {
      name: "toolSlot",
      level: "inline",
      start: (src) => src.indexOf("[[tool:"),
      tokenizer(src) {
        const match = MARKER.exec(src);
        return match ? { type: "toolSlot", raw: match[0], index: Number(match[1]) } : undefined;
      },
      renderer: (token) => `<span class="tool-slot" data-tool-index="${token.index}"></span>`,
    },
    {
      name: "mathBlock",
      level: "block",
      start: mathBlockStart,
      tokenizer(src) {
        const match = BLOCK_MATH.exec(src);
        const tex = match ? (match[1] ?? match[2]).trim() : "";
        return tex ? { type: "mathBlock", raw: match[0], tex } : undefined;
      },
      renderer: (token) => `<div class="math-display">${escapeHtml(token.tex)}</div>\n`,
    },
    {
      name: "math",
      level: "inline",
      start: (src) => {
        const index = src.search(/\$|\\[([]/);
        return index < 0 ? undefined : index;
      },
      tokenizer(src) {
        const match = INLINE_MATH.exec(src);
        const tex = match ? (match[1] ?? match[2] ?? match[3] ?? match[4]).trim() : "";
        if (!tex) return undefined;
        return { type: "math", raw: match[0], tex, display: match[1] !== undefined || match[2] !== undefined };
      },
      renderer: (token) => `<span class="${token.display ? "math-display" : "math-inline"}">${escapeHtml(token.tex)}</span>`,
    },
  ],
});

const purifier = DOMPurify(window);
purifier.addHook("uponSanitizeAttribute", (node, data) => {
  // Classes only in the exact shapes we emit; anything else a model smuggles in is dropped.
  if (data.attrName === "class") {
    const ok =
      (node.nodeName === "CODE" && LANGUAGE_CLASS.test(data.attrValue)) ||
      ((node.nodeName === "SPAN" || node.nodeName === "DIV") && (data.attrValue === "tool-slot" || data.attrValue === "math-display")) ||
      (node.nodeName === "SPAN" && data.attrValue === "math-inline");
    if (!ok) data.keepAttr = false;
  }
  if (data.attrName.startsWith("data-") && !(data.attrName === "data-tool-index" && /^\d{1,6}$/.test(data.attrValue))) data.keepAttr = false;
});
purifier.addHook("afterSanitizeAttributes", (node) => {
  // Links to other sites open in a new tab without access to this one; this site's links stay in place.
  if (node.nodeName === "A" && node.hasAttribute("href") && !isSameOriginUrl(node.getAttribute("href"))) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});
const PURIFY_CONFIG = {
  ALLOWED_TAGS,
  ALLOWED_ATTR,
  ALLOW_DATA_ATTR: true, // only data-tool-index survives (the hook above)
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|\/|#)/i,
  RETURN_DOM_FRAGMENT: true,
};

// Code colouring: highlight.js escapes the code it is given; its markup still goes through a sanitizer of its own
// that keeps nothing but <span> with highlight.js's own classes, and is used only if the text is unchanged.
const HIGHLIGHT_MAX_CHARS = 20_000; // longer blocks stay plain: colouring them would hold up the page
const HIGHLIGHT_CLASS = /^(?:hljs-[a-z_-]{1,30}(?: [a-z]{1,30}_{1,4}){0,4}|language-[a-z0-9-]{1,30})$/;
const codePurifier = DOMPurify(window);
codePurifier.addHook("uponSanitizeAttribute", (node, data) => {
  if (data.attrName === "class" && !HIGHLIGHT_CLASS.test(data.attrValue)) data.keepAttr = false;
});
const CODE_PURIFY_CONFIG = { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true };
// Coloured code by language and text, typeset math by TeX: a live stream re-renders every frame, and each is made once.
const MADE_MAX = 32;
const coloured = new Map();
const typeset = new Map();
let highlighter = null;
let hljsLoaded = null; // highlight.js once it has loaded, so later blocks are coloured in the same frame

/** `cache`'s value for `key`, made by `make()` the first time; the least recently used goes beyond MADE_MAX. */
function remembered(cache, key, make) {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    if (cache.size >= MADE_MAX) cache.delete(cache.keys().next().value);
  } else {
    cache.delete(key); // most recently used last, so the oldest goes first
  }
  cache.set(key, value);
  return value;
}

/** highlight.js, imported once on first use (null if it cannot load: the code then stays plain). */
function loadHighlighter() {
  highlighter ??= import("./vendor/highlight.min.js").then((module) => (hljsLoaded = module.default), () => null);
  return highlighter;
}

/** highlight.js's sanitized markup for `text`, or null when it does not know the language or the text is too long. */
function colouredFragment(hljs, text, language) {
  if (!hljs.getLanguage(language) || text.length > HIGHLIGHT_MAX_CHARS) return null;
  return remembered(coloured, `${language}\n${text}`, () => {
    const fragment = codePurifier.sanitize(hljs.highlight(text, { language, ignoreIllegals: true }).value, CODE_PURIFY_CONFIG);
    return fragment.textContent === text ? fragment : null;
  });
}

/** Colour a code block of a language highlight.js knows (at once if it has loaded); the text itself never changes. */
function highlightCode(code, language) {
  const paint = (hljs) => {
    const text = code.textContent;
    const fragment = hljs ? colouredFragment(hljs, text, language) : null;
    if (!fragment || code.classList.contains("hljs")) return;
    code.replaceChildren(fragment.cloneNode(true));
    code.classList.add("hljs");
  };
  if (hljsLoaded) paint(hljsLoaded);
  else loadHighlighter().then(paint);
}

// Math: KaTeX (with `trust` off: no links, classes or styles from TeX) writes MathML only, which goes through a
// sanitizer of its own (DOMPurify's MathML profile; the TeX stays in its <annotation>, which the browser does not show).
const MATH_MAX_CHARS = 2_000; // longer TeX stays text
const mathPurifier = DOMPurify(window);
const MATH_PURIFY_CONFIG = {
  USE_PROFILES: { mathMl: true },
  ADD_TAGS: ["semantics", "annotation"],
  FORBID_ATTR: ["href", "style", "id", "mathbackground"],
  RETURN_DOM_FRAGMENT: true,
};
let typesetter = null;
let katexLoaded = null;

/** KaTeX, imported once on first use (its bundle defines `katex` on the window; null if it cannot load). */
function loadTypesetter() {
  typesetter ??= import("./vendor/katex.min.js").then(() => (katexLoaded = globalThis.katex ?? null), () => null);
  return typesetter;
}

/** The sanitized MathML for `tex`, or null when KaTeX cannot read it (the TeX then stays as it is). */
function mathFragment(katex, tex, display) {
  if (tex.length > MATH_MAX_CHARS) return null;
  return remembered(typeset, `${display ? "display" : "inline"}\n${tex}`, () => {
    const html = katex.renderToString(tex, { displayMode: display, output: "mathml", throwOnError: false, trust: false, strict: "ignore" });
    if (html.includes("katex-error")) return null;
    const fragment = mathPurifier.sanitize(html, MATH_PURIFY_CONFIG);
    return fragment.querySelector("math") ? fragment : null;
  });
}

/** Typeset one math element (at once if KaTeX has loaded); its TeX stays its text until then, or if KaTeX cannot. */
function typesetMath(el) {
  const paint = (katex) => {
    const fragment = katex ? mathFragment(katex, el.textContent, el.classList.contains("math-display")) : null;
    if (!fragment || el.querySelector("math")) return;
    el.replaceChildren(fragment.cloneNode(true));
  };
  if (katexLoaded) paint(katexLoaded);
  else loadTypesetter().then(paint);
}

/** Sanitize an HTML string with the tray's one allowlist; returns an inert fragment. */
export function sanitizeMarkdownHtml(html) {
  return purifier.sanitize(html, PURIFY_CONFIG);
}

/** Drop a half-received trailing marker so it never flashes as raw text. */
export function withoutPartialMarker(text) {
  return text.replace(PARTIAL_MARKER, "");
}

/**
 * Render model text into a fragment of safe DOM nodes.
 * @param {string} text  markdown from the model (untrusted)
 * @param {(index: number) => Node} toolSlot  the card for tool_history[index]
 * @param {{copyCode?: (text: string, button: HTMLElement) => void, highlight?: boolean | "closed"}} options
 *   highlight: colour code - true every block (a final answer), "closed" only blocks whose closing fence has arrived
 *   (the live stream)
 */
export function renderText(text, toolSlot = null, options = {}) {
  fencesClosed = [];
  const html = marked.parse(String(text || ""));
  const closed = fencesClosed;
  fencesClosed = [];
  const highlight = options.highlight === "closed" ? (index) => closed[index] === true : Boolean(options.highlight);
  return renderHtml(html, toolSlot, { ...options, highlight });
}

/**
 * Render HTML (marked's, or the server's message_html: untrusted either way) through the same
 * sanitizer, then the same finishing: tool cards in their slots, code blocks with Copy, tables that scroll.
 * `highlight` is a boolean for every block, or a function of a block's index (renderText's "closed").
 */
export function renderHtml(html, toolSlot = null, { copyCode = null, highlight = false } = {}) {
  const fragment = sanitizeMarkdownHtml(typeof html === "string" ? html : "");
  for (const slot of fragment.querySelectorAll(".tool-slot[data-tool-index]")) {
    const card = toolSlot ? toolSlot(Number(slot.dataset.toolIndex)) : null;
    const parent = slot.parentElement;
    // A marker alone in its paragraph replaces the paragraph (a card is a block, not a word).
    if (card && parent?.tagName === "P" && parent.textContent.trim() === "" && parent.childElementCount === 1) parent.replaceWith(card);
    else if (card) slot.replaceWith(card);
    else slot.remove();
  }
  const colour = typeof highlight === "function" ? highlight : () => highlight === true;
  [...fragment.querySelectorAll("pre")].forEach((pre, index) => decorateCode(pre, copyCode, colour(index)));
  for (const math of fragment.querySelectorAll(".math-inline, .math-display")) typesetMath(math);
  for (const table of fragment.querySelectorAll("table")) {
    // wide tables scroll inside the bubble instead of widening the tray
    const wrap = h("div", { class: "chat-table-wrap", tabindex: "0", role: "region", "aria-label": gettext("Table") });
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return fragment;
}

/** A code block with its language and a Copy button; coloured when `highlight` and highlight.js knows its language. */
function decorateCode(pre, copyCode, highlight) {
  pre.classList.add("chat-code");
  const code = pre.querySelector("code");
  const language = [...(code?.classList ?? [])].find((c) => c.startsWith("language-"))?.slice(9) ?? "";
  if (highlight && code && language) highlightCode(code, language.toLowerCase());
  const copy = h("button", { type: "button", class: "chat-code-copy", "aria-label": gettext("Copy") }, gettext("Copy"));
  copy.addEventListener("click", () => copyCode?.(code ? code.textContent : pre.textContent, copy));
  const header = h("div", { class: "chat-code-header" }, h("span", { class: "chat-code-lang" }, language || "code"), copy);
  const wrap = h("div", { class: "chat-code-block" });
  pre.replaceWith(wrap);
  wrap.append(header, pre);
}
