/**
 * Edit stream: Accept applies a proposal to the form of the tab it belongs to; Reject dismisses it.
 * On another tab Accept says so and returns false, so the tray neither closes nor marks the proposal.
 */
import { registerPageHandlers } from "/static/chat/registry.js";
import { card, fill, notice } from "/static/pages/forms.js";

const TAB_OF = { schema_proposal: "semantic", retrieval_proposal: "retrieval", presentation_categories: "presentation" };

function onTab(type) {
  const form = document.getElementById("stream-form");
  if (form && form.dataset.tab === TAB_OF[type]) return true;
  notice(`Open the ${TAB_OF[type]} tab to apply this proposal.`);
  return false;
}

registerPageHandlers({
  payloadHandlers: {
    schema_proposal: {
      title: "Schema proposal",
      width: "480px",
      render(data) {
        const c = data.proposed_changes || {};
        return card([["Name", c.stream_name], ["Purpose", c.purpose], ["Topics", c.topics], ["Entities", c.entities], ["Confidence", data.confidence]], data.reasoning);
      },
      onAccept(data) {
        if (!onTab("schema_proposal")) return false;
        const c = data.proposed_changes || {};
        fill("field-stream-name", c.stream_name);
        fill("field-purpose", c.purpose);
        fill("field-topics", c.topics);
        fill("field-entities", c.entities);
        notice("Proposal applied to the form. Save to keep it.");
      },
      onReject: () => notice("Proposal dismissed."),
    },
    retrieval_proposal: {
      title: "Retrieval proposal",
      render: (data) => card([["Queries", data.queries], ["Sources", data.sources]], data.reasoning),
      onAccept(data) {
        if (!onTab("retrieval_proposal")) return false;
        fill("field-queries", data.queries || []);
        if ((data.sources || []).length) fill("field-sources", data.sources);
        notice("Queries applied to the form. Save to keep them.");
      },
      onReject: () => notice("Proposal dismissed."),
    },
    presentation_categories: {
      title: "Presentation categories",
      render: (data) => card((data.categories || []).map((c) => [c.name, c.description || ""]), data.reasoning),
      onAccept(data) {
        if (!onTab("presentation_categories")) return false;
        fill("field-categories", (data.categories || []).map((c) => (c.description ? `${c.name}: ${c.description}` : c.name)));
        notice("Categories applied to the form. Save to keep them.");
      },
      onReject: () => notice("Proposal dismissed."),
    },
  },
  clientActions: {
    switch_tab(data) {
      const tab = String(data?.tab || "");
      if (/^(semantic|retrieval|presentation)$/.test(tab)) window.location.assign(`?tab=${tab}`);
    },
  },
});
