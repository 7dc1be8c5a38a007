/**
 * Edit stream: Accept applies a proposal to the form of the tab it belongs to; Reject dismisses it.
 * On another tab Accept says so and returns false, so the tray neither closes nor marks the proposal.
 */
import { registerPageHandlers } from "/static/chat/registry.js";
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

document.getElementById("stream-tabs")?.addEventListener("click", (event) => {
  const link = event.target.closest("a.tabs__tab");
  if (link && link.getAttribute("aria-current") !== "page" && !mayLeave()) event.preventDefault();
});

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
