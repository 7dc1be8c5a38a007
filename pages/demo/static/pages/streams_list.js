/** Streams list: stream ideas and portfolio insights in the floating panel. */
import { registerPageHandlers } from "/static/chat/registry.js";
import { card } from "/static/pages/forms.js";
import { gettext } from "/static/chat/i18n.js";

registerPageHandlers({
  payloadHandlers: {
    stream_suggestions: {
      title: gettext("Stream ideas"),
      render(data) {
        return card((data.suggestions || []).map((s) => [s.name, [s.purpose, s.rationale].filter(Boolean).join(" — ")]));
      },
    },
    portfolio_insights: {
      title: gettext("Portfolio insights"),
      render(data) {
        return card([[gettext("Coverage"), data.coverage], [gettext("Gaps"), data.gaps], [gettext("Overlaps"), data.overlaps], [gettext("Recommendation"), data.recommendation]]);
      },
    },
  },
});
