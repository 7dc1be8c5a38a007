/** Home page: preview the proposed research stream, and let the page's prompt chips ask the tray. */
import { registerPageHandlers, onTrayReady } from "/static/chat/registry.js";
import { card } from "/static/pages/forms.js";

registerPageHandlers({
  payloadHandlers: {
    research_stream_form: {
      title: "Research stream preview",
      width: "460px",
      render(data) {
        const channels = (data.channels || []).map((c) => `${c.name} (${c.type}): ${(c.keywords || []).join(", ")}`);
        return card([
          ["Name", data.stream_name],
          ["Purpose", data.purpose],
          ["Reports", data.report_frequency],
          ["Channels", channels],
        ], "Use the Create button in the chat to create this stream.");
      },
    },
  },
});

// Prompt chips on the page open the tray and ask the assistant instead of following the link.
document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-chat-prompt]");
  if (!link) return;
  event.preventDefault();
  onTrayReady((tray) => tray.send(link.dataset.chatPrompt, "text_input"));
});
