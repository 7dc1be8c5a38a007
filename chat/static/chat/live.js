/**
 * The in-flight assistant turn: thinking indicator, streaming text (safe DOM only),
 * amber tool-progress cards and tool-approval cards. It owns only presentation; the tray
 * feeds it protocol events and replaces it with the final message when the run ends.
 */
import { h, button, icon, ICONS } from "./dom.js";
import { renderText, withoutPartialMarker } from "./markdown.js";
import { gettext, interpolate, interpolateNodes, serverText } from "./i18n.js";
import { fieldList, inputFields } from "./fields.js";

export class LiveTurn {
  /** @param {{approve(toolUseId, approved), copy?(text, button), labels?(tool): object|null}} callbacks */
  constructor(callbacks) {
    this.callbacks = callbacks;
    this.text = "";
    this.status = gettext("Thinking…");
    this.activeTools = []; // [{tool, toolUseId, input, message, progress, el}]
    this.toolHistory = []; // what we know of finished tools, by marker index
    this.titles = new Map(); // tool name -> its title (tool_start's `title`; a server before it sends none: the name)
    this.pendingApprovals = new Set();
    this.renderQueued = false;

    this.statusText = h("span", { class: "chat-thinking__text" }, this.status);
    this.thinkingEl = h(
      "div",
      { class: "chat-thinking", role: "status" },
      h("span", { class: "chat-dots", "aria-hidden": "true" }, h("span"), h("span"), h("span")),
      this.statusText,
    );
    this.streamEl = h("div", { class: "chat-bubble chat-bubble--assistant chat-bubble--streaming chat-md", "aria-busy": "true", hidden: true });
    this.streamBody = h("div", { class: "chat-stream-body" });
    this.streamEl.append(this.streamBody);
    // the streaming cursor sits at the end of the text (moved there on each render)
    this.cursor = h("span", { class: "chat-cursor", "aria-hidden": "true" });
    this.toolsEl = h("div", { class: "chat-live-tools" });
    this.approvalsEl = h("div", { class: "chat-live-approvals" });
    this.el = h("div", { class: "chat-msg chat-msg--assistant chat-msg--live" }, this.thinkingEl, this.streamEl, this.toolsEl, this.approvalsEl);
  }

  setStatus(message) {
    this.status = message ? serverText(message) : gettext("Thinking…");
    this.statusText.textContent = this.status;
    this.refreshThinking();
  }

  appendText(text) {
    this.text += text;
    this.scheduleRender();
  }

  /** What people read for a tool: the title its events carried, else its name. */
  titleOf(tool, title = null) {
    if (typeof title === "string" && title) this.titles.set(String(tool), title);
    return this.titles.get(String(tool)) ?? String(tool);
  }

  toolStart({ tool, input, tool_use_id: toolUseId, title }) {
    const message = h("div", { class: "chat-progress__message" }, gettext("Running…"));
    const bar = h("div", { class: "chat-progress__bar", hidden: true }, h("div", { class: "chat-progress__fill" }));
    const el = h(
      "div",
      { class: "chat-progress", role: "status", dataset: { tool: String(tool) } },
      h("span", { class: "chat-spinner", "aria-hidden": "true" }),
      h("div", { class: "chat-progress__main" }, h("div", { class: "chat-progress__tool" }, this.titleOf(tool, title)), message, bar),
    );
    this.activeTools.push({ tool, toolUseId, input, el, message, bar });
    this.toolsEl.append(el);
    this.refreshThinking();
  }

  toolProgress({ tool, message, progress }) {
    // tool_progress names the tool but not the call; the latest running call of it is the one.
    const entry = [...this.activeTools].reverse().find((t) => t.tool === tool) ?? this.activeTools.at(-1);
    if (!entry) return;
    if (message) entry.message.textContent = message;
    if (typeof progress === "number" && Number.isFinite(progress)) {
      const pct = Math.max(0, Math.min(1, progress > 1 ? progress / 100 : progress)) * 100;
      entry.bar.hidden = false;
      entry.bar.firstChild.style.width = `${pct}%`;
      entry.bar.setAttribute("role", "progressbar");
      entry.bar.setAttribute("aria-valuenow", String(Math.round(pct)));
      entry.bar.setAttribute("aria-valuemin", "0");
      entry.bar.setAttribute("aria-valuemax", "100");
    }
  }

  toolComplete({ tool, index }) {
    const i = this.activeTools.findIndex((t) => t.tool === tool);
    const [entry] = this.activeTools.splice(i >= 0 ? i : 0, 1);
    entry?.el.remove();
    this.toolHistory[index] = { tool_name: tool, title: this.titleOf(tool), input: entry?.input ?? {}, output: "" };
    this.refreshThinking();
    this.scheduleRender(); // a placeholder may now know its tool's name
  }

  approvalRequest({ tool, input, tool_use_id: toolUseId, title, summary, fields }) {
    if (this.approvalsEl.querySelector(`[data-tool-use-id="${CSS.escape(String(toolUseId))}"]`)) return;
    this.pendingApprovals.add(toolUseId);
    const name = this.titleOf(tool, title);
    // an approval wait is not "Running…": the tool waits for the user, which the approval card alone says (once)
    const running = this.activeTools.find((t) => t.toolUseId === toolUseId) ?? [...this.activeTools].reverse().find((t) => t.tool === tool);
    if (running) running.message.hidden = true;
    const actions = h("div", { class: "chat-approval__actions" });
    const decide = (approved) => {
      this.pendingApprovals.delete(toolUseId);
      actions.replaceChildren(h("span", { class: "chat-muted" }, approved ? gettext("Approved") : gettext("Denied")));
      if (running) {
        running.message.hidden = false;
        running.message.textContent = approved ? gettext("Running…") : gettext("Denied");
      }
      this.callbacks.approve(toolUseId, approved);
      this.refreshThinking();
    };
    actions.append(
      button(gettext("Approve"), () => decide(true), { cls: "chat-btn chat-btn--primary" }),
      button(gettext("Deny"), () => decide(false), { cls: "chat-btn chat-btn--secondary" }),
    );
    this.approvalsEl.append(
      h(
        "div",
        { class: "chat-approval", role: "group", "aria-label": interpolate(gettext("Approval needed: %(tool)s"), { tool: name }), dataset: { toolUseId: String(toolUseId) } },
        h("div", { class: "chat-approval__status", role: "status" }, gettext("Waiting for your approval")),
        h("div", { class: "chat-approval__title" }, ...interpolateNodes(gettext("Allow %(tool)s?"), { tool: h("strong", {}, name) })),
        approvalDetails(input, summary, fields, this.callbacks.labels?.(tool) ?? null),
        actions,
      ),
    );
    this.refreshThinking();
  }

  /** Thinking dots only while nothing else shows progress. */
  refreshThinking() {
    this.thinkingEl.hidden = Boolean(this.text) || this.activeTools.length > 0 || this.pendingApprovals.size > 0;
  }

  // Deltas arrive faster than frames; re-render the bubble at most once per frame.
  scheduleRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      this.renderNow();
    });
  }

  renderNow() {
    const visible = withoutPartialMarker(this.text);
    this.streamEl.hidden = !visible;
    // The same renderer and sanitizer as the final message (markdown.js), once per frame at most; a code block is
    // coloured once its closing fence has arrived (colouring the growing one would repaint it every frame).
    const options = { copyCode: this.callbacks.copy, highlight: "closed" };
    this.streamBody.replaceChildren(renderText(visible, (index) => this.placeholder(index), options));
    let last = this.streamBody;
    while (last.lastElementChild && !last.lastElementChild.matches(".chat-code-block, .chat-table-wrap, .tool-slot, .chat-tool-placeholder")) {
      last = last.lastElementChild;
    }
    (last.matches?.(".chat-code-block, .chat-table-wrap") ? this.streamBody : last).append(this.cursor);
    this.refreshThinking();
  }

  placeholder(index) {
    const done = this.toolHistory[index];
    const name = done ? done.title || done.tool_name : "";
    return h("div", { class: "tool-slot chat-tool-placeholder", dataset: { toolIndex: String(index) } }, icon(ICONS.tool, "chat-icon chat-tool-card__icon"), name);
  }

  /** Stop animating (the turn ended); the tray swaps this element out. */
  finish() {
    this.streamEl.setAttribute("aria-busy", "false");
    if (this.renderQueued) this.renderNow();
  }
}

/**
 * What a person judges a pending call by: the tool's own sentence (`summary`), else its input as labelled fields, both
 * as text (they carry what the model and the database said: never HTML). A server before these additions sent
 * neither: then the fields are made here from the input (`labels`: the tray config's for the tool), never JSON.
 */
export function approvalDetails(input, summary, fields, labels = null) {
  if (typeof summary === "string" && summary) return h("p", { class: "chat-approval__summary" }, summary);
  const rows = Array.isArray(fields) ? fields.filter((f) => f && typeof f.label === "string") : inputFields(input, labels);
  return fieldList(rows, "chat-approval__fields");
}
