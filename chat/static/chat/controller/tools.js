/**
 * Frontend tools and page state in the turn (docs/tray.md, "Frontend tools and page state"): a run's
 * `client_tool_call` for this tab runs the page's handler and answers with chat.tool_result, once per call; a `state`
 * event replaces the page's state. Another tab's call, or one already answered (a resume replays events), only shows
 * its card. Methods of the tray (controller.js); `this` is the tray.
 */
import {
  TAB_ID,
  applyState,
  clientToolDefinitions,
  failureOutput,
  findTool,
  getState,
  resultOf,
  setState,
} from "../tools.js";

/** The error the model reads when the page goes away while a handler runs (the contract's wording). */
export const PAGE_LEFT = "the page was left before the tool finished";

export function toolsState() {
  return {
    runningCalls: new Map(), // tool_use_id -> the call's run id, while its handler runs
    answeredCalls: new Set(), // tool_use_ids this page answered (or gave up on): never run or answered again
  };
}

export const tools = {
  /** What a chat.send of this tab carries besides the message: its id, its tools and its state. */
  turnExtras() {
    return { tabId: TAB_ID, clientTools: clientToolDefinitions(), state: getState() };
  },

  /** The page's state, for a handler (`tray.setState`) or any caller holding the tray; see tools.js. */
  setState(values, options) {
    return setState(values, options);
  },

  getState() {
    return getState();
  },

  /**
   * A `client_tool_call`: run it when it is this tab's and not seen before. The answer goes back once, whatever the
   * handler does: a value, a throw, a promise that settles late (after pagehide answered it), or never.
   */
  async runClientTool(event) {
    const id = event?.tool_use_id;
    if (typeof id !== "string" || event.tab_id !== TAB_ID) return false; // another tab's: the card only
    if (this.answeredCalls.has(id) || this.runningCalls.has(id)) return false; // a replay after a resume
    const runId = event.run_id ?? this.protocol.run?.runId;
    this.runningCalls.set(id, runId);
    const tool = findTool(event.tool);
    const before = JSON.stringify(getState());
    let result;
    if (!tool) {
      result = { output: `this page has no tool named ${event.tool}`, is_error: true, payload: null };
    } else {
      try {
        result = resultOf(await tool.handler(structuredCopy(event.input), { tray: this }));
      } catch (err) {
        result = { output: failureOutput(err), is_error: true, payload: null };
      }
    }
    if (!this.runningCalls.has(id)) return false; // answered meanwhile (the page was left)
    const after = getState();
    this.answerToolCall(id, { ...result, state: JSON.stringify(after) !== before ? after : null });
    return true;
  },

  /** Send a call's chat.tool_result, at most once for its id. */
  answerToolCall(id, { output, is_error: isError = false, payload = null, state = null }) {
    const runId = this.runningCalls.get(id);
    this.runningCalls.delete(id);
    if (this.answeredCalls.has(id) || !runId) return false;
    this.answeredCalls.add(id);
    return this.protocol.toolResult({ runId, toolUseId: id, tabId: TAB_ID, output, isError, payload, state });
  },

  /** pagehide: every call still running ends with an error the model reads (best effort: the socket may be gone). */
  leavePage() {
    for (const id of [...this.runningCalls.keys()]) this.answerToolCall(id, { output: PAGE_LEFT, is_error: true });
  },

  /** A run's `state` event: the page's state is replaced and the page is told (onState, "pagechat:state"). */
  applyRunState(event) {
    applyState(event.state, event.delta);
  },
};

/** The input as the handler's own copy (JSON data). */
function structuredCopy(input) {
  return input && typeof input === "object" ? JSON.parse(JSON.stringify(input)) : {};
}
