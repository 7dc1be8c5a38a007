/** Streams list: stream ideas and portfolio insights in the floating panel. */
import { registerPageHandlers } from "/static/chat/registry.js";
import { card } from "/static/pages/forms.js";

registerPageHandlers({
  payloadHandlers: {
    stream_suggestions: {
      title: "Stream ideas",
      render(data) {
        return card((data.suggestions || []).map((s) => [s.name, [s.purpose, s.rationale].filter(Boolean).join(" — ")]));
      },
    },
    portfolio_insights: {
      title: "Portfolio insights",
      render(data) {
        return card([["Coverage", data.coverage], ["Gaps", data.gaps], ["Overlaps", data.overlaps], ["Recommendation", data.recommendation]]);
      },
    },
  },
});
