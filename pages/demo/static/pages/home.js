/** Home page: preview the proposed research stream, and let the page's prompt chips ask the tray. */
import { registerPageHandlers, onTrayReady } from "/static/chat/registry.js";
import { card, choiceLabel, refreshMain } from "/static/pages/forms.js";
import { gettext } from "/static/chat/i18n.js";

registerPageHandlers({
  payloadHandlers: {
    research_stream_form: {
      title: gettext("Research stream preview"),
      width: "460px",
      render(data) {
        const channels = (data.channels || []).map((c) => `${c.name} (${choiceLabel(c.type)}): ${(c.keywords || []).join(", ")}`);
        return card([
          [gettext("Name"), data.stream_name],
          [gettext("Purpose"), data.purpose],
          [gettext("Reports"), choiceLabel(data.report_frequency)],
          [gettext("Channels"), channels],
        ]);
      },
      // no onAccept: the card's primary button is the answer's own "create_stream" action (the tray links them)
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

// A stream created from the chat: show it in "Recent streams" and the stats without leaving the page.
document.addEventListener("pagechat:refresh", (event) => {
  if (event.detail.action === "create_stream") refreshMain();
});
