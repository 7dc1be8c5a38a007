/** New stream form: Accept fills the form from a template or adds suggested topics. */
import { registerPageHandlers } from "/static/chat/registry.js";
import { addLines, card, fill, notice } from "/static/pages/forms.js";

registerPageHandlers({
  payloadHandlers: {
    stream_template: {
      title: "Stream template",
      render: (data) => card([["Name", data.stream_name], ["Purpose", data.purpose], ["Reports", data.report_frequency], ["Topics", data.topics]]),
      onAccept(data) {
        fill("field-stream-name", data.stream_name);
        fill("field-purpose", data.purpose);
        fill("field-report-frequency", data.report_frequency);
        fill("field-topics", data.topics || []);
        notice("Template applied to the form. Review it and create the stream.");
      },
      onReject: () => notice("Template dismissed."),
    },
    topic_suggestions: {
      title: "Topic suggestions",
      render: (data) => card([["Topics", data.topics], ["Why", data.rationale]]),
      onAccept(data) {
        addLines("field-topics", data.topics || []);
        notice("Topics added to the form.");
      },
      onReject: () => notice("Suggestions dismissed."),
    },
  },
});
