/**
 * Global payload handlers shipped with the tray. Pages can override any of them by
 * registering a handler of the same type (page handlers are looked up first).
 * All rendering uses DOM APIs and textContent: payload data is model/tool output.
 */
import { registerGlobalPayloadHandler } from "./registry.js";
import { h, isSameOriginPath } from "./dom.js";

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
  return text ? h("div", { class: "chat-article__meta" }, text) : null;
}

function searchResults(data) {
  const results = Array.isArray(data) ? data : data?.results ?? data?.articles ?? [];
  const list = h("ol", { class: "chat-article-list" });
  for (const article of results) {
    const href = articleLink(article);
    const title = article.title || "Untitled";
    list.append(
      h(
        "li",
        { class: "chat-article-list__item" },
        href ? h("a", { href, class: "chat-article__title" }, title) : h("span", { class: "chat-article__title" }, title),
        meta(article.journal, articleDate(article)),
      ),
    );
  }
  const total = typeof data?.total === "number" ? data.total : results.length;
  return h(
    "div",
    { class: "chat-search-results" },
    h("p", { class: "chat-muted" }, `${total} result${total === 1 ? "" : "s"}${data?.query ? ` for “${data.query}”` : ""}`),
    results.length ? list : h("p", {}, "No articles found."),
  );
}

function articleCard(data) {
  const article = data?.article ?? data ?? {};
  const href = articleLink(article);
  const title = article.title || "Untitled";
  return h(
    "article",
    { class: "chat-article" },
    h("h3", { class: "chat-article__title" }, href ? h("a", { href }, title) : title),
    authorsText(article.authors) ? h("div", { class: "chat-article__authors" }, authorsText(article.authors)) : null,
    meta(article.journal, articleDate(article), article.pmid ? `PMID ${article.pmid}` : null),
    article.abstract ? h("p", { class: "chat-article__abstract" }, String(article.abstract)) : null,
  );
}

registerGlobalPayloadHandler("search_results", { title: "Search results", width: "420px", render: searchResults });
registerGlobalPayloadHandler("pubmed_article", { title: "Article", width: "460px", render: articleCard });
registerGlobalPayloadHandler("article", { title: "Article", width: "460px", render: articleCard });

// The older spec sends tool history as a custom payload; fold it into the message's inline
// tool cards instead of opening a panel.
registerGlobalPayloadHandler("tool_history", {
  panel: false,
  augment(message, data) {
    if (Array.isArray(data) && !(message.tool_history && message.tool_history.length)) {
      message.tool_history = data;
    }
  },
});
