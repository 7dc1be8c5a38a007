/**
 * Message rendering: user bubbles, final assistant messages (sanitized server HTML with
 * inline tool cards), chips and action buttons. Pure functions of a message object plus
 * the tray for callbacks, so live turns and REST-loaded history render identically.
 */
import { h, button, icon, ICONS, jsonText } from "./dom.js";
import { renderHtml, renderText } from "./markdown.js";
import { runSuggestedAction } from "./actions.js";
import { findPayloadHandler } from "./registry.js";
import { acceptsProposal, decidesProposal } from "./proposals.js";
import { linkCitations, sourcesList } from "./sources.js";
import { fieldLabels, fieldList, inputFields } from "./fields.js";
import { formatNumber, gettext, gettext_noop, interpolate, outcomeLabel, titleInSentence } from "./i18n.js";

const STYLES = new Set(["primary", "secondary", "warning"]);
// Message statuses (from the run's end) that deserve a visible tag.
const STATUS_TAGS = {
  cancelled: { cls: "stopped", text: gettext_noop("stopped") },
  error: { cls: "error", text: gettext_noop("incomplete") },
  interrupted: { cls: "error", text: gettext_noop("interrupted") },
  streaming: { cls: "stopped", text: gettext_noop("still being written…") },
};

// Why an answer is unfinished (protocol: complete.payload.stop_reason); the latest such answer offers Continue.
const UNFINISHED = {
  max_tokens: gettext_noop("The answer stopped at its length limit."),
  max_iterations: gettext_noop("The answer stopped at the limit of steps one answer may take."),
};

/**
 * A user bubble with Copy (when it says something); the latest question gets an Edit button (the tray hides it on
 * older ones) when it was typed: a chip or a button click (`interactionType` value_selected, action_executed) is not
 * words to rewrite.
 * @param {string} text
 * @param {object|null} tray  null for a bubble without actions
 */
export function renderUserMessage(text, tray = null, attachments = [], interactionType = "text_input") {
  const files = Array.isArray(attachments) ? attachments.filter((a) => a && typeof a.url === "string") : [];
  const el = h(
    "div",
    { class: "chat-msg chat-msg--user" },
    files.length ? renderAttachments(files) : null,
    text || !files.length ? h("div", { class: "chat-bubble chat-bubble--user" }, text) : null,
  );
  if (tray) {
    el.append(
      h(
        "div",
        { class: "chat-msg__actions chat-msg__actions--user", role: "group", "aria-label": gettext("Question actions") },
        text ? actionButton(gettext("Copy"), ACTION_ICONS.copy, (e) => tray.copy(text, e.currentTarget), "chat-copy") : null,
        interactionType === "text_input" ? actionButton(gettext("Edit"), ACTION_ICONS.edit, () => tray.beginEdit(text), "chat-edit") : null,
      ),
    );
  }
  return el;
}

// A document icon for attachments without a thumbnail (PDFs).
const FILE_ICON = "M6 2h9l5 5v15H6zM14 2v6h6";

/** Same-origin API paths only (what the server gives); anything else is not linked or loaded. */
function safePath(url) {
  return typeof url === "string" && url.startsWith("/") && !url.startsWith("//") ? url : null;
}

/**
 * A message's attachments: image thumbnails and PDF names, each a link to the file (served to its
 * owner only). Built with createElement; the name is text, never HTML.
 * @param {Array<{name, content_type, url, thumbnail_url}>} files
 */
export function renderAttachments(files) {
  return h(
    "ul",
    { class: "chat-attachments-list", "aria-label": gettext("Attachments") },
    files.map((f) => {
      const href = safePath(f.url);
      const thumb = safePath(f.thumbnail_url);
      const name = String(f.name || "attachment");
      const inner = thumb
        ? h("img", { class: "chat-attachment__thumb", src: thumb, alt: name, loading: "lazy" })
        : h("span", { class: "chat-attachment__file" }, icon(FILE_ICON, "chat-icon"), h("span", { class: "chat-attachment__name" }, name));
      return h(
        "li",
        { class: "chat-attachment" },
        href ? h("a", { href, target: "_blank", rel: "noopener", title: name, class: "chat-attachment__link" }, inner) : inner,
      );
    }),
  );
}

// Icons of the per-message actions (decorative: every button has its accessible name).
const ACTION_ICONS = {
  copy: "M9 9h11v11H9zM5 15H4V4h11v1",
  regenerate: "M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7",
  edit: "M4 20h4L19 9l-4-4L4 16zM14 6l4 4",
  good: "M7 10v11H3V10zM7 10l4-8a3 3 0 0 1 3 3v4h6a2 2 0 0 1 2 2.3l-1.4 8A2 2 0 0 1 18.6 21H7",
  bad: "M17 14V3h4v11zM17 14l-4 8a3 3 0 0 1-3-3v-4H4a2 2 0 0 1-2-2.3l1.4-8A2 2 0 0 1 5.4 3H17",
  previous: "M15 5l-7 7 7 7",
  diagnostics: "M3 12h4l3-8 4 16 3-8h4",
  next: "M9 5l7 7-7 7",
};

/** An icon button whose accessible name is `name` (shown as its tooltip too). */
function actionButton(name, path, onClick, cls = "") {
  return h("button", { type: "button", class: `chat-msg-action ${cls}`, "aria-label": name, title: name, onclick: onClick }, icon(path, "chat-icon"));
}

/**
 * Copy (the version shown), Regenerate (the latest answer only), Good response / Bad response (pressed state =
 * stored feedback).
 */
function messageActions(message, tray, shown = () => message) {
  const bar = h("div", { class: "chat-msg__actions", role: "group", "aria-label": gettext("Answer actions") });
  bar.append(actionButton(gettext("Copy"), ACTION_ICONS.copy, (e) => tray.copy(shown().content, e.currentTarget), "chat-copy"));
  bar.append(actionButton(gettext("Regenerate"), ACTION_ICONS.regenerate, () => tray.regenerate(), "chat-regenerate"));
  if (message.id !== null && message.id !== undefined) {
    const good = actionButton(gettext("Good response"), ACTION_ICONS.good, () => tray.feedback(message, "good", bar), "chat-feedback chat-feedback--good");
    const bad = actionButton(gettext("Bad response"), ACTION_ICONS.bad, () => tray.feedback(message, "bad", bar), "chat-feedback chat-feedback--bad");
    good.setAttribute("aria-pressed", String(message.feedback === "good"));
    bad.setAttribute("aria-pressed", String(message.feedback === "bad"));
    bar.append(good, bad);
  }
  return bar;
}

/**
 * Collapsible card for tool_history[index]; collapsed by default. Its input shows as labelled fields, as an approval
 * shows them (fields.js; `labels` names the keys, the tray config's for the tool); the input as sent (JSON) only
 * to staff (`staff`), under "Diagnostics" in the card.
 */
export function toolCard(index, entry, { labels = null, staff = false } = {}) {
  // its title (protocol addition); an answer stored or sent before titles has its name only
  const name = entry?.title || entry?.tool_name || entry?.tool || `tool ${index}`;
  const rows = inputFields(entry?.input ?? {}, labels);
  const details = h(
    "div",
    { class: "chat-tool-card__body", hidden: true },
    h("div", { class: "chat-tool-card__label" }, gettext("Input")),
    rows.length ? fieldList(rows, "chat-tool-card__fields") : h("p", { class: "chat-muted" }, gettext("No input")),
    h("div", { class: "chat-tool-card__label" }, gettext("Output")),
    h("pre", { class: "chat-pre" }, jsonText(entry?.output ?? "")),
    staff
      ? h(
          "details",
          { class: "chat-tool-card__raw" },
          h("summary", {}, gettext("Diagnostics")),
          h("pre", { class: "chat-pre" }, jsonText(entry?.input ?? {})),
        )
      : null,
  );
  const toggle = h(
    "button",
    { type: "button", class: "chat-tool-card__header", "aria-expanded": "false" },
    icon(ICONS.tool, "chat-icon chat-tool-card__icon"),
    h("span", { class: "chat-tool-card__name" }, name),
    h("span", { class: "chat-tool-card__chevron", "aria-hidden": "true" }, "▸"),
  );
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    details.hidden = !open;
  });
  return h("div", { class: "chat-tool-card", dataset: { toolIndex: String(index) } }, toggle, details);
}

/**
 * The final message body: the server's message_html, or (lacking it) the markdown rendered here;
 * either way through the same sanitizer and finishing as the live stream (markdown.js).
 */
function messageBody(message, tray) {
  const body = h("div", { class: "chat-bubble chat-bubble--assistant chat-md" });
  const card = (index) => {
    const entry = (message.tool_history || [])[index];
    return toolCard(index, entry, { labels: fieldLabels(tray.config, entry?.tool_name), staff: Boolean(tray.config?.is_staff) });
  };
  const options = { copyCode: (text, btn) => tray.copy(text, btn), highlight: true };
  const rendered = message.message_html ? renderHtml(message.message_html, card, options) : renderText(message.content, card, options);
  // an earlier version (the pager) has no sources of its own: its references stay text and it has no list
  body.append(linkCitations(rendered, message.sources));
  const list = sourcesList(message.sources);
  if (list) body.append(list);
  return body;
}

/** Chips and action buttons; only the latest assistant message gets them. */
export function renderSuggestions(message, tray) {
  const values = message.suggested_values.filter((v) => v && typeof v.value === "string");
  const actions = message.suggested_actions.filter((a) => a && typeof a.action === "string");
  if (!values.length && !actions.length) return null;
  const wrap = h("div", { class: "chat-suggestions" });
  if (values.length) {
    // the chips' own lead-in: it goes with them when they leave an older answer (a model's text does not say it)
    wrap.append(h("p", { class: "chat-chips__caption" }, gettext("Try one of these:")));
    wrap.append(
      h(
        "div",
        { class: "chat-chips", role: "group", "aria-label": gettext("Suggested replies") },
        values.map((v) => button(v.label || v.value, () => tray.send(v.value, "value_selected"), { cls: "chat-chip" })),
      ),
    );
  }
  if (actions.length) {
    wrap.append(
      h(
        "div",
        { class: "chat-actions", role: "group", "aria-label": gettext("Suggested actions") },
        actions.map((a) => {
          const style = STYLES.has(a.style) ? a.style : "secondary";
          return suggestedActionButton(a, style, tray, message.custom_payload);
        }),
      ),
    );
  }
  return wrap;
}

// Actions that decide something (server actions, discarding the proposal, starting over) run once:
// then their group is disabled. Page and other client actions (highlight, copy, a tab switch) may repeat.
const DECIDING = new Set(["cancel", "restart"]);

/**
 * A suggested action's button. One that would do what the answer's proposal card does (its server action with the
 * proposal's data accepts it, `cancel` rejects it) is marked `data-pagechat-decides` with the proposal's id: deciding the
 * proposal on either side disables it (one accept path), and clicking the server one marks the proposal accepted.
 */
function suggestedActionButton(action, style, tray, payload = null) {
  const decides = payload?.payload_id !== undefined && payload?.payload_id !== null && decidesProposal(action, payload);
  const btn = button(action.label || action.action, async () => {
    if (action.handler === "server" || DECIDING.has(action.action)) {
      const group = btn.closest(".chat-suggestions");
      for (const b of group?.querySelectorAll(".chat-actions button") ?? []) b.disabled = true;
    }
    await runSuggestedAction(action, tray);
    // sent (the reply is on its way): the proposal it applies is accepted, its card's Accept and Reject with it
    if (decides && acceptsProposal(action, payload) && tray.protocol?.following) tray.markPayload(payload, "accepted", { stepAside: false });
  }, { cls: `chat-btn chat-btn--${style}` });
  if (decides) btn.dataset.pagechatDecides = String(payload.payload_id);
  return btn;
}

/**
 * "‹ 2 / 3 ›" under an answer with earlier versions: shows one of them in place of the answer's body (the latest is
 * the answer itself, which alone keeps its feedback, card and suggestions).
 */
function versionPager(el, message, onShow) {
  const versions = [...message.earlier_versions, message];
  let index = versions.length - 1;
  const position = h("span", { class: "chat-versions__position", "aria-live": "polite" }); // "1 / 3" is read out on a change
  const prev = actionButton(gettext("Previous version"), ACTION_ICONS.previous, () => show(index - 1), "chat-version-prev");
  const next = actionButton(gettext("Next version"), ACTION_ICONS.next, () => show(index + 1), "chat-version-next");
  const show = (i) => {
    index = Math.max(0, Math.min(versions.length - 1, i));
    onShow(versions[index]);
    el.classList.toggle("is-earlier-version", index < versions.length - 1);
    position.textContent = interpolate(gettext("%(index)s / %(count)s"), { index: formatNumber(index + 1), count: formatNumber(versions.length) });
    prev.disabled = index === 0;
    next.disabled = index === versions.length - 1;
  };
  const pager = h("div", { class: "chat-versions", role: "group", "aria-label": gettext("Versions of this answer") }, prev, position, next);
  show(index);
  return pager;
}

/** A whole assistant message: bubble, status tag, payload/diagnostics buttons, suggestions. */
export function renderAssistantMessage(message, tray, { latest = false } = {}) {
  const el = h("div", { class: "chat-msg chat-msg--assistant", dataset: { messageId: String(message.id ?? "") } });
  let body = messageBody(message, tray);
  let shown = message;
  el.append(body);
  const tag = STATUS_TAGS[message.status];
  if (tag) el.append(h("div", { class: `chat-tag chat-tag--${tag.cls}` }, gettext(tag.text)));
  const unfinished = message.status === "complete" && UNFINISHED[message.stop_reason];
  if (unfinished) {
    el.append(
      h(
        "div",
        { class: "chat-unfinished", role: "note" },
        h("span", {}, gettext(unfinished)),
        button(gettext("Continue"), () => tray.continueAnswer(), { cls: "chat-link-btn chat-continue" }),
      ),
    );
  }

  const payload = message.custom_payload;
  const payloadId = payload?.payload_id !== undefined && payload?.payload_id !== null ? String(payload.payload_id) : null;
  const tools = h("div", { class: "chat-msg__tools", dataset: payloadId ? { payloadId } : {} });
  const handler = payload && findPayloadHandler(payload.type);
  if (payload && !(handler && handler.panel === false)) {
    const title = handler?.title || payload.title; // the renderer's, else the type's (a protocol addition)
    const label = title ? interpolate(gettext("View %(title)s"), { title: titleInSentence(title) }) : gettext("View details");
    tools.append(button(label, () => tray.openPayload(payload), { cls: "chat-link-btn chat-view-payload" }));
    if (payload.summary) tools.append(h("span", { class: "chat-muted" }, String(payload.summary)));
    const outcome = payloadId && tray.payloadOutcomes?.get(payloadId);
    if (outcome) tools.append(h("span", { class: `chat-tag chat-payload-outcome chat-tag--${outcome}` }, outcomeLabel(outcome)));
  }
  if (tools.childElementCount) el.append(tools);
  const actions = messageActions(message, tray, () => shown);
  // staff only (the server sends diagnostics to staff alone): one more quiet icon among the answer's actions
  if (tray.config.is_staff && message.diagnostics) {
    actions.append(actionButton(gettext("Diagnostics"), ACTION_ICONS.diagnostics, () => tray.openDiagnostics(message.diagnostics), "chat-diagnostics-btn"));
  }
  if (message.earlier_versions.length) {
    actions.prepend(versionPager(el, message, (version) => {
      if (version === shown) return;
      const next = messageBody(version, tray);
      body.replaceWith(next);
      body = next;
      shown = version;
    }));
  }
  el.append(actions);
  // Chips and actions only on the latest answer; its action buttons are disabled once its proposal is decided.
  if (latest) {
    const suggestions = renderSuggestions(message, tray);
    if (suggestions) {
      if (payloadId && tray.payloadOutcomes?.get(payloadId)) disableActions(suggestions, payloadId);
      el.append(suggestions);
    }
  }
  return el;
}

/**
 * Disable the action buttons (not the chips) of a suggestions block whose decision is made: with `payloadId`, only
 * those that would accept or reject that proposal (see suggestedActionButton).
 */
export function disableActions(container, payloadId = null) {
  const selector = payloadId === null ? ".chat-actions button" : `.chat-actions button[data-pagechat-decides="${CSS.escape(String(payloadId))}"]`;
  for (const b of container.querySelectorAll(selector)) b.disabled = true;
}
