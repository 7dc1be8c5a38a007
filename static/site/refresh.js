/**
 * Page data that a server action can change (counts, lists) is marked `data-refresh` with an id.
 * When the chat tray says the page's data changed ("pagechat:refresh", after a server action),
 * those parts are fetched again and swapped in place: no full reload, nothing typed is lost.
 */
async function refreshMarkedParts() {
  if (subjectGone) return; // this page's own record was deleted: fetching the page again would only answer 404
  const marked = [...document.querySelectorAll("[data-refresh][id]")];
  if (!marked.length) return;
  let html;
  try {
    const response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!response.ok) return;
    html = await response.text();
  } catch {
    return; // offline or the server is gone: the page keeps what it shows
  }
  const fresh = new DOMParser().parseFromString(html, "text/html");
  for (const el of marked) {
    const next = fresh.getElementById(el.id);
    if (next) el.replaceChildren(...[...next.childNodes].map((n) => document.importNode(n, true)));
  }
  document.dispatchEvent(new CustomEvent("site:refreshed"));
}

// Set when the record this page is about was deleted (the action that deleted it moves on to another page).
let subjectGone = false;

// One fetch for the refresh and the changes a turn announces together (they arrive in the same task).
let refreshing = null;
function refreshSoon() {
  refreshing ??= Promise.resolve().then(() => {
    refreshing = null;
    return refreshMarkedParts();
  });
  return refreshing;
}

document.addEventListener("pagechat:refresh", refreshSoon);

/**
 * What an approved tool or a server action changed ("pagechat:changed", detail {entity, id, kind, fields, tool|action}):
 * a field the page shows is marked `data-entity`, `data-entity-id` and `data-field` and takes its new value at once
 * (text only: the value is data); a record created or deleted changes counts and lists (and an update without its
 * values may change anything), so the marked parts are fetched again. The document's title follows a renamed record shown in it.
 */
document.addEventListener("pagechat:changed", (event) => {
  const { entity, id, kind, fields } = event.detail || {};
  if (typeof entity !== "string" || id === undefined || id === null) return;
  const selector = `[data-entity="${CSS.escape(entity)}"][data-entity-id="${CSS.escape(String(id))}"][data-field]`;
  if (kind === "updated" && fields && typeof fields === "object") {
    for (const el of document.querySelectorAll(selector)) {
      const field = el.dataset.field;
      if (!Object.hasOwn(fields, field) || fields[field] === null || typeof fields[field] === "object") continue;
      const old = el.textContent;
      const value = String(fields[field]);
      el.textContent = value;
      if (old && document.title.includes(old)) document.title = document.title.replace(old, value);
    }
  } else if (kind === "deleted" && document.querySelector(`${selector}[data-entity-subject]`)) {
    // this page was the record's own (its heading is marked the page's subject): it is gone, and the action that
    // deleted it moves on to another page; fetching this one again (now or for the refresh that follows) would
    // only answer 404
    subjectGone = true;
  } else {
    refreshSoon(); // created or deleted (counts and lists change), or updated without the new values
  }
});
