/**
 * The demo site's chat payload renderers: how the tray shows this site's article search
 * results and article cards. Loaded on every page with the tray (templates/pages/_tray.html)
 * and written against the tray's public API only (docs/tray.md), as a host project would.
 * Payload data is model/tool output: DOM APIs and textContent only, links only to this site.
 */
import { registerPayloadRenderer } from "../chat/pagechat.js";

/** el("a", {href: "/x"}, "text", child): attributes as attributes, children as text or nodes. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A same-origin path ("/x", not "//host/x" or "/\\host"): the only links a card may hold. */
function isSameOriginPath(value) {
  if (typeof value !== "string" || !value.startsWith("/") || value.startsWith("//") || value.startsWith("/\\")) return false;
  try {
    return new URL(value, window.location.origin).origin === window.location.origin;
  } catch {
    return false;
  }
}

/** Link to the article page: the payload's own same-origin `url`, else /articles/<id>/. */
function articleLink(article) {
  if (isSameOriginPath(article.url)) return article.url;
  const id = article.external_id ?? article.id ?? article.article_id;
  if (id === undefined || id === null || !/^[\w.-]+$/.test(String(id))) return null;
  return `/articles/${encodeURIComponent(id)}/`;
}

function articleDate(article) {
  return article.published ?? article.published_date ?? article.date ?? article.pub_date ?? article.publication_date ?? article.year ?? "";
}

function authorsText(authors) {
  if (Array.isArray(authors)) {
    const names = authors.map((a) => (typeof a === "string" ? a : a?.name ?? "")).filter(Boolean);
    return names.length > 6 ? `${names.slice(0, 6).join(", ")}, et al.` : names.join(", ");
  }
  return typeof authors === "string" ? authors : "";
}

function meta(...parts) {
  const text = parts.filter((p) => p !== "" && p !== null && p !== undefined).join(" · ");
  return text ? el("div", { class: "chat-article__meta" }, text) : null;
}

function searchResults(data) {
  const results = Array.isArray(data) ? data : data?.results ?? data?.articles ?? [];
  const list = el("ol", { class: "chat-article-list" });
  for (const article of results) {
    const href = articleLink(article);
    const title = article.title || "Untitled";
    list.append(
      el(
        "li",
        { class: "chat-article-list__item" },
        href ? el("a", { href, class: "chat-article__title" }, title) : el("span", { class: "chat-article__title" }, title),
        meta(article.journal, articleDate(article)),
      ),
    );
  }
  const total = typeof data?.total === "number" ? data.total : results.length;
  return el(
    "div",
    { class: "chat-search-results" },
    el("p", { class: "chat-article__count" }, `${total} result${total === 1 ? "" : "s"}${data?.query ? ` for “${data.query}”` : ""}`),
    results.length ? list : el("p", {}, "No articles found."),
  );
}

function articleCard(data) {
  const article = data?.article ?? data ?? {};
  const href = articleLink(article);
  const title = article.title || "Untitled";
  const authors = authorsText(article.authors);
  return el(
    "article",
    { class: "chat-article" },
    el("h3", { class: "chat-article__title" }, href ? el("a", { href }, title) : title),
    authors ? el("div", { class: "chat-article__authors" }, authors) : null,
    meta(article.journal, articleDate(article), article.pmid ? `PMID ${article.pmid}` : null),
    article.abstract ? el("p", { class: "chat-article__abstract" }, String(article.abstract)) : null,
  );
}

registerPayloadRenderer("search_results", searchResults, { title: "Search results", icon: "search", width: "420px" });
registerPayloadRenderer("pubmed_article", articleCard, { title: "Article", icon: "article", width: "460px" });
registerPayloadRenderer("article", articleCard, { title: "Article", icon: "article", width: "460px" });
