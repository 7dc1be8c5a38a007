/**
 * The demo site's chat payload renderers: how the tray shows this site's article search
 * results and article cards. Loaded on every page with the tray (templates/pages/_tray.html)
 * and written against the tray's public API only (docs/tray.md), as a host project would.
 * Payload data is model/tool output: DOM APIs and textContent only, links only to this site.
 */
import { registerPayloadRenderer } from "../chat/pagechat.js";
import { gettext, interpolate } from "../chat/i18n.js";

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
    return names.length > 6 ? interpolate(gettext("%(names)s, et al."), { names: names.slice(0, 6).join(", ") }) : names.join(", ");
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
    const title = article.title || gettext("Untitled");
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
    results.length ? list : el("p", {}, gettext("No articles found.")),
  );
}

function articleCard(data) {
  const article = data?.article ?? data ?? {};
  const href = articleLink(article);
  const title = article.title || gettext("Untitled");
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

registerPayloadRenderer("search_results", searchResults, { title: gettext("Search results"), icon: "search", width: "420px" });
registerPayloadRenderer("pubmed_article", articleCard, { title: gettext("Article"), icon: "article", width: "460px" });
registerPayloadRenderer("article", articleCard, { title: gettext("Article"), icon: "article", width: "460px" });

/** Rows of [label, value] as a definition list; empty values are left out, arrays become lists. */
function rows(pairs, cls = "chat-facts") {
  const dl = el("dl", { class: cls });
  for (const [label, value] of pairs) {
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) continue;
    dl.append(el("dt", {}, label), el("dd", {}, Array.isArray(value) ? el("ul", {}, value.map((v) => el("li", {}, String(v)))) : String(value)));
  }
  return dl;
}

function searchFilters(data) {
  const d = data || {};
  const years = d.year_from || d.year_to ? `${d.year_from ?? "…"} – ${d.year_to ?? "…"}` : null;
  return el(
    "div",
    { class: "chat-search-filters" },
    d.applied ? el("p", { class: "chat-search-filters__applied" }, interpolate(gettext("Applied to the reports list: %(count)s match."), { count: Number(d.count) || 0 })) : null,
    rows([[gettext("Query"), d.query], [gettext("Topic"), d.topic], [gettext("Years"), years], [gettext("Journal"), d.journal], [gettext("Stream"), d.stream_id]]),
  );
}

function validationResults(data) {
  const d = data || {};
  const list = (title, items, cls) =>
    Array.isArray(items) && items.length
      ? el("section", { class: `chat-validation__${cls}` }, el("h4", {}, title), el("ul", {}, items.map((i) => el("li", {}, String(i)))))
      : null;
  return el(
    "div",
    { class: "chat-validation" },
    el("p", { class: `chat-validation__verdict chat-validation__verdict--${d.valid ? "ok" : "bad"}` }, d.valid ? gettext("No errors found.") : gettext("Problems found.")),
    list(gettext("Errors"), d.errors, "errors"),
    list(gettext("Warnings"), d.warnings, "warnings"),
    list(gettext("Suggestions"), d.suggestions, "suggestions"),
  );
}

function querySuggestion(data) {
  const d = data || {};
  return el(
    "div",
    { class: "chat-query-suggestion" },
    el("pre", { class: "chat-query-suggestion__query" }, String(d.query ?? "")),
    d.explanation ? el("p", {}, String(d.explanation)) : null,
    rows([[gettext("Alternatives"), d.alternatives]]),
  );
}

function aiColumnSuggestion(data) {
  const d = data || {};
  return el(
    "div",
    { class: "chat-ai-column" },
    el("h3", {}, String(d.column_name ?? gettext("Column"))),
    d.description ? el("p", {}, String(d.description)) : null,
    rows([[gettext("Prompt"), d.prompt], [gettext("Example values"), d.example_values]]),
  );
}

/** Web results link out: only http(s) URLs, opened without opener or referrer. */
function webLink(url) {
  try {
    const parsed = new URL(String(url));
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

function webSearchResults(data) {
  const d = data || {};
  const results = Array.isArray(d.results) ? d.results : [];
  const list = el("ol", { class: "chat-article-list" });
  for (const r of results) {
    const href = isSameOriginPath(r.url) ? r.url : webLink(r.url);
    const title = r.title || r.url || gettext("Untitled");
    list.append(
      el(
        "li",
        { class: "chat-article-list__item" },
        href ? el("a", { href, class: "chat-article__title", rel: "noopener noreferrer" }, title) : el("span", { class: "chat-article__title" }, title),
        r.snippet ? el("div", { class: "chat-article__meta" }, String(r.snippet)) : null,
      ),
    );
  }
  return el(
    "div",
    { class: "chat-search-results" },
    d.backend ? el("p", { class: "chat-web-search__backend" }, String(d.backend)) : null,
    el("p", { class: "chat-article__count" }, `${results.length} result${results.length === 1 ? "" : "s"}${d.query ? ` for “${d.query}”` : ""}`),
    results.length ? list : el("p", {}, gettext("Nothing found.")),
  );
}

registerPayloadRenderer("search_filters", searchFilters, { title: gettext("Search filters"), icon: "filter", width: "380px" });
registerPayloadRenderer("validation_results", validationResults, { title: gettext("Validation results"), icon: "check", width: "420px" });
registerPayloadRenderer("query_suggestion", querySuggestion, { title: gettext("Query suggestion"), icon: "search", width: "420px" });
registerPayloadRenderer("ai_column_suggestion", aiColumnSuggestion, { title: gettext("AI column suggestion"), icon: "data", width: "420px" });
registerPayloadRenderer("web_search_results", webSearchResults, { title: gettext("Web search results"), icon: "globe", width: "460px" });
