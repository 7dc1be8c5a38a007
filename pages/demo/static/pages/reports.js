/**
 * Reports: apply_filters from the chat filters the reports list (the route comes from the server's reply), and the
 * frontend tool `highlight` (docs/tray.md, "Frontend tools and page state") points at one report of the list.
 */
import { registerTool, setState } from "/static/chat/pagechat.js";
import { gettext } from "/static/chat/i18n.js";
import { refreshMain } from "/static/pages/forms.js";

document.addEventListener("pagechat:refresh", (event) => {
  if (event.detail.action !== "apply_filters") return;
  const route = event.detail.message?.custom_payload?.data?.route;
  if (typeof route !== "string" || !route.startsWith("/reports/")) return;
  if (document.getElementById("reports-filter")) refreshMain(route).then((ok) => ok && publishList());
  else window.location.assign(route);
});

/** The reports the list shows now: [{id, title, row}]. */
function listed() {
  return [...document.querySelectorAll("#reports-table tr[data-report-id]")].map((row) => ({
    id: row.dataset.reportId,
    title: (row.querySelector("td a")?.textContent ?? "").trim(),
    row,
  }));
}

const fold = (text) => String(text).normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
const wordsOf = (text) => new Set(fold(text).split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 2));

/** The listed report `wanted` names: its id ("12", "#12"), its title, a part of it, else the most words in common. */
export function findReport(reports, wanted) {
  const text = String(wanted ?? "").trim();
  const id = text.replace(/^#/, "");
  if (/^\d+$/.test(id)) return reports.find((r) => r.id === id) ?? null;
  const folded = fold(text);
  if (!folded) return null;
  const exact = reports.find((r) => fold(r.title) === folded) ?? reports.find((r) => fold(r.title).includes(folded));
  if (exact) return exact;
  const said = wordsOf(text);
  let best = null;
  let bestHits = 0;
  for (const report of reports) {
    const hits = [...wordsOf(report.title)].filter((w) => said.has(w)).length;
    if (hits > bestHits) [best, bestHits] = [report, hits];
  }
  return best;
}

/** The list, as the page's shared state: the model reads which reports are on screen. */
function publishList() {
  setState({ reports: listed().slice(0, 50).map(({ id, title }) => ({ id: Number(id), title })) });
}

if (document.getElementById("reports-table") || document.getElementById("reports-filter")) {
  registerTool({
    name: "highlight",
    title: gettext("Highlight a report"),
    description: "Highlight one report in the list on this page (it is marked and scrolled into view). "
      + "Name it by its id or its title (a part of the title will do); the page's state lists the reports shown.",
    parameters: {
      type: "object",
      properties: { report: { type: "string", description: "The report's id or title, as the list shows it." } },
      required: ["report"],
    },
    handler({ report }) {
      const reports = listed();
      if (!reports.length) throw new Error("the list shows no reports");
      const found = findReport(reports, report);
      if (!found) throw new Error(`no report in the list matches ${JSON.stringify(String(report ?? "").slice(0, 100))}`);
      for (const other of document.querySelectorAll(".is-highlighted")) other.classList.remove("is-highlighted");
      found.row.classList.add("is-highlighted");
      found.row.scrollIntoView({ block: "center", behavior: "smooth" });
      return `Highlighted the report “${found.title}” (id ${found.id}).`;
    },
  });
  publishList();
}
