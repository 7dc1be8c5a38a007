/** New stream form: Accept fills the form from a template or adds suggested topics. */
import { registerPageHandlers } from "/static/chat/registry.js";
import { addLines, card, choiceLabel, fill, notice } from "/static/pages/forms.js";
import { gettext } from "/static/chat/i18n.js";

registerPageHandlers({
  payloadHandlers: {
    stream_template: {
      title: gettext("Stream template"),
      render: (data) => card([[gettext("Name"), data.stream_name], [gettext("Purpose"), data.purpose], [gettext("Reports"), choiceLabel(data.report_frequency)], [gettext("Topics"), data.topics]]),
      onAccept(data) {
        fill("field-stream-name", data.stream_name);
        fill("field-purpose", data.purpose);
        fill("field-report-frequency", data.report_frequency);
        fill("field-topics", data.topics || []);
        notice(gettext("Template applied to the form. Review it and create the stream."));
      },
      onReject: () => notice(gettext("Template dismissed.")),
    },
    topic_suggestions: {
      title: gettext("Topic suggestions"),
      render: (data) => card([[gettext("Topics"), data.topics], [gettext("Why"), data.rationale]]),
      onAccept(data) {
        addLines("field-topics", data.topics || []);
        notice(gettext("Topics added to the form."));
      },
      onReject: () => notice(gettext("Suggestions dismissed.")),
    },
  },
});

// validate_form changes nothing: the page shows its verdict next to the form.
document.addEventListener("pagechat:action-result", (event) => {
  const { result, message } = event.detail;
  if (result.action === "validate_form" && result.status === "succeeded") notice(String(message.content || "").split("\n")[0]);
});
