/**
 * Helpers the demo's page scripts share: fill a form field from an accepted chat proposal,
 * build small payload cards with DOM APIs (payload data is model output: textContent only).
 */
import { h } from "/static/chat/dom.js";
import { gettext } from "/static/chat/i18n.js";

/**
 * A choice of the demo's models as people read it in the page's language (a report frequency, a channel type):
 * "weekly" -> "Weekly" ("Wöchentlich" in German); the payload keeps the value. Unknown values are shown as they are.
 */
export function choiceLabel(value) {
  const labels = {
    daily: gettext("Daily"), weekly: gettext("Weekly"), biweekly: gettext("Biweekly"), monthly: gettext("Monthly"),
    scientific: gettext("Scientific"), clinical: gettext("Clinical"), regulatory: gettext("Regulatory"), news: gettext("News"),
  };
  return Object.hasOwn(labels, value) ? labels[value] : value;
}

/** Set a field's value (a list becomes one item per line), mark it filled; false when the field is not on this page. */
export function fill(id, value) {
  const field = document.getElementById(id);
  if (!field || value === undefined || value === null) return false;
  field.value = Array.isArray(value) ? value.join("\n") : String(value);
  field.classList.add("is-filled");
  field.dispatchEvent(new Event("input", { bubbles: true }));
  return true;
}

/** Add lines to a textarea, skipping ones already there. */
export function addLines(id, items) {
  const field = document.getElementById(id);
  if (!field) return false;
  const have = new Set(field.value.split("\n").map((l) => l.trim()).filter(Boolean));
  const merged = [...have, ...items.map(String).filter((i) => !have.has(i.trim()))];
  return fill(id, merged);
}

/** A short-lived notice under the page header (role=status, so it is announced). */
export function notice(text) {
  let box = document.getElementById("page-notice");
  if (!box) {
    box = h("div", { id: "page-notice", class: "page-notice", role: "status" });
    (document.querySelector("main") || document.body).prepend(box);
  }
  box.textContent = text;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { box.textContent = ""; }, 6000);
}

/** A definition list card: rows of [label, value]; arrays render as lists. */
export function card(rows, intro = null) {
  const dl = h("dl", { class: "proposal" });
  for (const [label, value] of rows) {
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) continue;
    dl.append(h("dt", {}, label), h("dd", {}, Array.isArray(value) ? h("ul", {}, value.map((v) => h("li", {}, typeof v === "string" ? v : JSON.stringify(v)))) : String(value)));
  }
  return h("div", { class: "proposal-card" }, intro ? h("p", { class: "proposal__intro" }, intro) : null, dl);
}

/**
 * Reload the page's main region from the server (after a server action changed it), leaving the chat tray
 * alone. `url` (same-origin) also becomes the address. The HTML is this site's own rendering, not model output.
 */
export async function refreshMain(url = window.location.href) {
  const target = new URL(url, window.location.origin);
  if (target.origin !== window.location.origin) return false;
  const response = await fetch(target, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) return false;
  const doc = new DOMParser().parseFromString(await response.text(), "text/html");
  const fresh = doc.getElementById("main");
  const main = document.getElementById("main");
  if (!fresh || !main) return false;
  main.replaceChildren(...Array.from(fresh.childNodes, (node) => document.importNode(node, true)));
  if (target.href !== window.location.href) window.history.replaceState(null, "", target.href);
  document.title = doc.title || document.title;
  main.dataset.refreshed = String(Number(main.dataset.refreshed || 0) + 1);
  return true;
}
