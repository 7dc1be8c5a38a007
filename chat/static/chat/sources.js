/**
 * Citations (complete.payload.sources, docs/sources.md): an answer's `[N]` references become numbered links to the
 * objects' pages, and a "Sources" list goes under the answer. Only this site's pages are linked; any other URL (another
 * site, a `javascript:` one) leaves the reference and the title as text. Everything a source says is put in as text,
 * never as markup, into a fragment the markdown sanitizer has already made safe (markdown.js).
 */
import { h } from "./dom.js";
import { gettext, interpolate } from "./i18n.js";

const REFERENCE = /\[(\d{1,4})\]/g;
// a reference inside code, or already inside a link, stays what it is
const SKIP = new Set(["A", "CODE", "PRE", "BUTTON"]);

/** The path of `url` when it is an http(s) page of `base`'s origin (so the link stays on this site), else null. */
export function sameOriginHref(url, base) {
  if (typeof url !== "string" || !url.trim()) return null;
  try {
    const origin = new URL(base);
    const target = new URL(url.trim(), origin);
    if ((target.protocol !== "http:" && target.protocol !== "https:") || target.origin !== origin.origin) return null;
    return `${target.pathname}${target.search}${target.hash}`;
  } catch {
    return null;
  }
}

/** The sources worth showing, by number: `{n, title, snippet, href}` (href null when it is not this site's page). */
export function sourceEntries(sources, base) {
  const entries = new Map();
  for (const s of Array.isArray(sources) ? sources : []) {
    if (!s || !Number.isInteger(s.n) || s.n < 1 || entries.has(s.n)) continue;
    const title = typeof s.title === "string" && s.title.trim() ? s.title : interpolate(gettext("Source %(n)s"), { n: s.n });
    entries.set(s.n, { n: s.n, title, snippet: typeof s.snippet === "string" ? s.snippet : "", href: sameOriginHref(s.url, base) });
  }
  return entries;
}

/**
 * A text split at its references: strings, and `{n, href, title}` for each `[N]` that names a source with a page on
 * this site (a reference to anything else stays in the text as written).
 */
export function citationParts(text, entries) {
  const parts = [];
  let last = 0;
  for (const match of String(text).matchAll(REFERENCE)) {
    const entry = entries.get(Number(match[1]));
    if (!entry?.href) continue;
    if (match.index > last) parts.push(text.slice(last, match.index));
    parts.push({ n: entry.n, href: entry.href, title: entry.title });
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

/** A reference's link: `[N]` opening the object's page, its title for a pointer and a screen reader. */
function citationLink(part) {
  return h("a", { class: "chat-cite", href: part.href, title: part.title, "aria-label": interpolate(gettext("Source %(n)s: %(title)s"), { n: part.n, title: part.title }) }, `[${part.n}]`);
}

/** Turn the fragment's `[N]` references to `sources` into links, in place (text in code and in links is left alone). */
export function linkCitations(fragment, sources, base = window.location.href) {
  const entries = sourceEntries(sources, base);
  if (!entries.size) return fragment;
  const texts = [];
  const walk = (node) => {
    for (const child of node.childNodes) {
      if (child.nodeType === 3) texts.push(child);
      else if (child.nodeType === 1 && !SKIP.has(child.nodeName)) walk(child);
    }
  };
  walk(fragment);
  for (const node of texts) {
    const parts = citationParts(node.nodeValue, entries);
    if (parts.length === 1 && typeof parts[0] === "string") continue;
    node.replaceWith(...parts.map((part) => (typeof part === "string" ? part : citationLink(part))));
  }
  return fragment;
}

/** The "Sources" list under an answer (null when it has none): numbered titles, linked to this site's pages, and snippets. */
export function sourcesList(sources, base = window.location.href) {
  const entries = [...sourceEntries(sources, base).values()].sort((a, b) => a.n - b.n);
  if (!entries.length) return null;
  const items = entries.map((entry) =>
    h(
      "li",
      { class: "chat-sources__item", value: String(entry.n) },
      entry.href ? h("a", { class: "chat-sources__title", href: entry.href }, entry.title) : h("span", { class: "chat-sources__title" }, entry.title),
      entry.snippet ? h("span", { class: "chat-sources__snippet" }, entry.snippet) : null,
    ),
  );
  const heading = h("p", { class: "chat-sources__label" }, gettext("Sources"));
  return h("div", { class: "chat-sources", role: "note", "aria-label": gettext("Sources") }, heading, h("ol", { class: "chat-sources__list" }, items));
}
