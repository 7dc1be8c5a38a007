/**
 * Edit stream: Accept applies a proposal to the form of the tab it belongs to; Reject dismisses it.
 * On another tab Accept says so and returns false, so the tray neither closes nor marks the proposal.
 *
 * Frontend tools the model may call (docs/tray.md, "Frontend tools and page state"): switch_tab, fill_field (one
 * field, filled as an accepted proposal fills it: highlighted, unsaved) and highlight_section. The page publishes its
 * tab as shared state ({tab}).
 */
import { onState, registerPageHandlers, registerTool, setContext, setState } from "/static/chat/pagechat.js";
import { card, fill, notice, refreshMain } from "/static/pages/forms.js";
import { gettext, gettext_noop, interpolate } from "/static/chat/i18n.js";

const TAB_OF = { schema_proposal: "semantic", retrieval_proposal: "retrieval", presentation_categories: "presentation" };
// the tab names as the notice says them (in the page's language)
const TAB_NAMES = { semantic: gettext_noop("semantic"), retrieval: gettext_noop("retrieval"), presentation: gettext_noop("presentation") };

function onTab(type) {
  const form = document.getElementById("stream-form");
  if (form && form.dataset.tab === TAB_OF[type]) return true;
  notice(interpolate(gettext("Open the %(tab)s tab to apply this proposal."), { tab: gettext(TAB_NAMES[TAB_OF[type]]) }));
  return false;
}

registerPageHandlers({
  payloadHandlers: {
    schema_proposal: {
      title: gettext("Schema proposal"),
      width: "480px",
      render(data) {
        const c = data.proposed_changes || {};
        return card([[gettext("Name"), c.stream_name], [gettext("Purpose"), c.purpose], [gettext("Topics"), c.topics], [gettext("Entities"), c.entities], [gettext("Confidence"), data.confidence]], data.reasoning);
      },
      onAccept(data) {
        if (!onTab("schema_proposal")) return false;
        const c = data.proposed_changes || {};
        fill("field-stream-name", c.stream_name);
        fill("field-purpose", c.purpose);
        fill("field-topics", c.topics);
        fill("field-entities", c.entities);
        notice(gettext("Proposal applied to the form. Save to keep it."));
      },
      onReject: () => notice(gettext("Proposal dismissed.")),
    },
    retrieval_proposal: {
      title: gettext("Retrieval proposal"),
      render: (data) => card([[gettext("Queries"), data.queries], [gettext("Sources"), data.sources]], data.reasoning),
      onAccept(data) {
        if (!onTab("retrieval_proposal")) return false;
        fill("field-queries", data.queries || []);
        if ((data.sources || []).length) fill("field-sources", data.sources);
        notice(gettext("Queries applied to the form. Save to keep them."));
      },
      onReject: () => notice(gettext("Proposal dismissed.")),
    },
    presentation_categories: {
      title: gettext("Presentation categories"),
      render: (data) => card((data.categories || []).map((c) => [c.name, c.description || ""]), data.reasoning),
      onAccept(data) {
        if (!onTab("presentation_categories")) return false;
        fill("field-categories", (data.categories || []).map((c) => (c.description ? `${c.name}: ${c.description}` : c.name)));
        notice(gettext("Categories applied to the form. Save to keep them."));
      },
      onReject: () => notice(gettext("Proposal dismissed.")),
    },
  },
  clientActions: {
    switch_tab(data) {
      const tab = String(data?.tab || "");
      if (/^(semantic|retrieval|presentation)$/.test(tab) && mayLeave()) window.location.assign(`?tab=${tab}`);
    },
  },
});

// Each tab is its own form: leaving a tab with unsaved changes (an accepted proposal not yet saved, say) asks
// first, so they are never discarded silently.
const LEAVE_QUESTION = gettext_noop("This tab has unsaved changes. Leave without saving them?");

function dirty() {
  const form = document.getElementById("stream-form");
  if (!form) return false;
  return [...form.elements].some((el) => {
    if (el.type === "hidden" || el.type === "submit" || el.type === "button") return false;
    if (el instanceof HTMLSelectElement) return [...el.options].some((o) => o.selected !== o.defaultSelected);
    if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
    return "defaultValue" in el && el.value !== el.defaultValue;
  });
}

function mayLeave() {
  return !dirty() || window.confirm(gettext(LEAVE_QUESTION));
}

// (on the document: the tabs are inside the main region, which a switch_tab call replaces)
document.addEventListener("click", (event) => {
  const link = event.target.closest?.("#stream-tabs a.tabs__tab");
  if (link && link.getAttribute("aria-current") !== "page" && !mayLeave()) event.preventDefault();
});

// ---- frontend tools -------------------------------------------------------------------------------------------

/** The page's tabs as the tab bar shows them: [{key, title}]. */
function tabs() {
  return [...document.querySelectorAll("#stream-tabs a.tabs__tab[data-tab]")].map((a) => ({ key: a.dataset.tab, title: a.textContent.trim() }));
}

function currentTab() {
  return document.getElementById("stream-form")?.dataset.tab ?? null;
}

/** Every tab's form fields ({name, tab, id, label}), rendered by the view for fill_field. */
const FIELDS = JSON.parse(document.getElementById("stream-tool-fields")?.textContent || "[]");

function titleOf(key) {
  return tabs().find((t) => t.key === key)?.title ?? key;
}

/** Publish where the page is: the tray sends it with each message, as state and as the page context. */
function publishTab() {
  const tab = currentTab();
  if (!tab) return;
  setState({ tab });
  setContext({ active_tab: tab });
}

class Refused extends Error {}

/**
 * Show another tab without leaving the page (its region is fetched; the tray and its run stay): the unsaved changes
 * of this tab are asked about first, as a click on the tab asks. Throws when the person keeps them.
 */
async function showTab(key) {
  if (currentTab() === key) return false;
  if (!mayLeave()) throw new Refused(`the person stayed on the ${titleOf(currentTab())} tab to keep its unsaved changes`);
  const url = new URL(window.location.href);
  url.searchParams.set("tab", key);
  if (!(await refreshMain(url.href))) throw new Error(`the ${titleOf(key)} tab could not be loaded`);
  publishTab();
  return true;
}

const tabKeys = tabs().map((t) => t.key);

if (tabKeys.length) {
  registerTool({
    name: "switch_tab",
    title: gettext("Switch tab"),
    description: `Switch the page to another tab of the stream's settings: ${tabs().map((t) => `${t.key} (${t.title})`).join(", ")}. `
      + "The page stays (the chat goes on); unsaved changes of the current tab are asked about first.",
    parameters: {
      type: "object",
      properties: { tab: { type: "string", enum: tabKeys, description: "The tab to show." } },
      required: ["tab"],
    },
    async handler({ tab }) {
      if (!tabKeys.includes(tab)) throw new Error(`there is no tab ${JSON.stringify(tab)}; the tabs are ${tabKeys.join(", ")}`);
      const switched = await showTab(tab);
      return switched ? `Switched to the ${titleOf(tab)} tab.` : `The ${titleOf(tab)} tab is already shown.`;
    },
  });

  registerTool({
    name: "fill_field",
    title: gettext("Fill a field"),
    description: "Fill in one field of the stream's settings form with a value, highlighted and not saved: the person "
      + "reviews it and saves the tab. A field of another tab switches to that tab first. List fields take one item per line. "
      + `Fields: ${FIELDS.map((f) => `${f.name} (${f.label}, ${f.tab} tab)`).join(", ")}.`,
    parameters: {
      type: "object",
      properties: {
        field: { type: "string", enum: FIELDS.map((f) => f.name), description: "The field to fill." },
        value: { type: "string", description: "The value to write (one item per line for a list)." },
      },
      required: ["field", "value"],
    },
    async handler({ field, value }) {
      const spec = FIELDS.find((f) => f.name === field);
      if (!spec) throw new Error(`there is no field ${JSON.stringify(field)}`);
      if (typeof value !== "string") throw new Error("the value must be text");
      await showTab(spec.tab);
      const widget = document.getElementById(spec.id);
      if (widget instanceof HTMLSelectElement && ![...widget.options].some((o) => o.value === value)) {
        throw new Error(`${spec.label} takes one of: ${[...widget.options].map((o) => o.value).join(", ")}`);
      }
      // the same path as an accepted proposal: the field is filled and marked, the form is not saved
      if (!fill(spec.id, value)) throw new Error(`the field ${spec.label} is not on the page`);
      widget.focus({ preventScroll: true });
      widget.scrollIntoView({ block: "center", behavior: "smooth" });
      notice(interpolate(gettext("%(field)s filled from the chat. Save to keep it."), { field: spec.label }));
      return `Filled ${spec.label} on the ${titleOf(spec.tab)} tab (not saved yet: the person saves the tab).`;
    },
  });

  const SECTIONS = ["form", "summary", "topics", "queries", "channels", "categories"];
  registerTool({
    name: "highlight_section",
    title: gettext("Highlight a section"),
    description: "Highlight a section of this page to draw the person's eye to it: form (the current tab's settings form), summary (the "
      + "\"At a glance\" box), or one part of the summary: topics, queries, channels, categories.",
    parameters: {
      type: "object",
      properties: { section: { type: "string", enum: SECTIONS, description: "The part of the page to highlight." } },
      required: ["section"],
    },
    handler({ section }) {
      const el = document.querySelector(`#main [data-section="${CSS.escape(String(section))}"]`);
      if (!el) throw new Error(`there is no section ${JSON.stringify(section)} on the page`);
      highlight(el);
      return `Highlighted the ${section} section.`;
    },
  });
  publishTab();

  // A tool may change the page's state during a run (a server tool through its context): the tab it names is shown.
  onState((state) => {
    if (typeof state.tab === "string" && tabKeys.includes(state.tab) && state.tab !== currentTab()) {
      showTab(state.tab).catch(() => publishTab()); // the person kept this tab: the state says so again
    }
  });
}

/** One highlighted element at a time, scrolled into view. */
function highlight(el) {
  for (const other of document.querySelectorAll(".is-highlighted")) other.classList.remove("is-highlighted");
  el.classList.add("is-highlighted");
  el.scrollIntoView({ block: "center", behavior: "smooth" });
}

// Server actions from the chat: saved settings are shown at once; a deleted stream has no page any more.
document.addEventListener("pagechat:refresh", (event) => {
  if (event.detail.action === "update_config") refreshMain().then((ok) => ok && notice(gettext("Settings saved from the chat.")));
  else if (event.detail.action === "delete_entity") window.location.assign("/research-streams/");
});

// A rename approved in the chat ("pagechat:changed", docs/tray.md): the site's refresh.js puts the new name in the
// heading, the breadcrumb and the document's title; the form's name field follows too unless the person has edited
// it (what they typed is theirs to save or discard). Its default value moves with it, so the tab is not made dirty.
document.addEventListener("pagechat:changed", (event) => {
  const { entity, id, kind, fields } = event.detail || {};
  const header = document.getElementById("stream-header");
  if (entity !== "research_stream" || kind !== "updated" || !header || String(id) !== header.dataset.streamId) return;
  const name = fields && typeof fields === "object" ? fields.name : undefined;
  if (typeof name !== "string") return;
  const field = document.getElementById("field-stream-name");
  if (field && field.value === field.defaultValue) {
    field.defaultValue = name;
    field.value = name;
  }
});
