/**
 * Page data that a server action can change (counts, lists) is marked `data-refresh` with an id.
 * When the chat tray says the page's data changed ("pagechat:refresh", after a server action),
 * those parts are fetched again and swapped in place: no full reload, nothing typed is lost.
 */
async function refreshMarkedParts() {
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

document.addEventListener("pagechat:refresh", refreshMarkedParts);
