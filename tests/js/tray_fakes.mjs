// A tray for the controller's feature tests: the features composed as the controller composes them
// (chat/static/chat/controller/features.js), with the real store and protocol client over a fake network,
// and a recording view and renderers instead of the DOM.
import { ConversationStore, memoryAdapter } from "../../chat/static/chat/store.js";
import { ProtocolClient } from "../../chat/static/chat/protocol.js";
import { composeFeatures, featureState } from "../../chat/static/chat/controller/features.js";
import { event, fakeClock, fakeNetwork, silentLogger } from "./fakes.mjs";

/** What the tray asks of its view, recorded: appended elements, notices, errors, page events, the composer. */
export function fakeView() {
  const view = {
    isOpen: false,
    input: { value: "" },
    log: { querySelectorAll: () => [] },
    shown: [], // elements in the conversation, in order
    notices: [], // [text, kind]
    errors: [], // [message, retry or null]
    dispatched: [], // [name, detail]
    editing: [], // showEditing's arguments
    busy: false,
    calls: [], // every other call, [name, ...args]
    appendMessage(el) {
      view.shown.push(el);
    },
    prependMessages(els) {
      view.shown.unshift(...els);
    },
    clearMessages() {
      view.shown = [];
    },
    notice(text, kind) {
      view.notices.push([text, kind]);
    },
    showError(message, retry) {
      view.errors.push([message, retry]);
    },
    clearError() {
      view.errors = [];
    },
    dispatch(name, detail) {
      view.dispatched.push([name, detail]);
    },
    setComposerText(text) {
      view.input.value = text;
    },
    showEditing(...args) {
      view.editing.push(args);
    },
    showOpen() {
      view.isOpen = true;
    },
    showClosed() {
      view.isOpen = false;
    },
    setBusy(busy) {
      view.busy = busy;
    },
  };
  return new Proxy(view, {
    get: (target, name) => (name in target ? target[name] : (...args) => target.calls.push([name, ...args])),
  });
}

/** The renderers as plain records: what would be drawn, and the in-flight turn's view. */
export function fakeRender() {
  return {
    userMessage: (text, _tray, attachments = [], interactionType = "text_input") => ({ kind: "user", text, attachments, interactionType, remove() {} }),
    assistantMessage: (message, _tray, { latest = false } = {}) => ({ kind: "assistant", message, latest }),
    liveTurn: (hooks) => {
      const live = {
        hooks,
        kind: "live",
        text: "",
        toolHistory: [],
        statuses: [],
        approvals: [],
        finished: false,
        el: { kind: "live", removed: false, remove() { live.el.removed = true; } },
        setStatus: (s) => live.statuses.push(s),
        appendText: (t) => { live.text += t; },
        toolStart: (e) => live.toolHistory.push({ tool: e.tool, input: e.input ?? {} }),
        toolProgress() {},
        toolComplete() {},
        approvalRequest: (e) => live.approvals.push(e),
        finish: () => { live.finished = true; },
      };
      return live;
    },
  };
}

/** REST answers the test scripts; every call is recorded as [name, ...args]. */
export function fakeApi(answers = {}) {
  const calls = [];
  const api = { calls };
  for (const name of ["getConversation", "renameConversation", "markMessage", "uploadAttachment", "discardAttachment"]) {
    api[name] = async (...args) => {
      calls.push([name, ...args]);
      const answer = answers[name];
      return typeof answer === "function" ? answer(...args) : answer ?? {};
    };
  }
  return api;
}

/**
 * A tray made of the controller's features. `tray`, `network` (the socket's frames), `view`, `api`, and helpers:
 * `sent(type)` the frames of a type the client sent, `accept()` opens the socket, `push(type, fields)` delivers the
 * next event of the followed run.
 */
export function testTray({ config = {}, api = {} } = {}) {
  const network = fakeNetwork();
  const clock = fakeClock();
  const tray = composeFeatures({});
  Object.assign(tray, featureState());
  tray.config = { user: "7", page: "reports", context: {}, ...config };
  tray.store = new ConversationStore({ storage: memoryAdapter() });
  tray.api = fakeApi(api);
  tray.view = fakeView();
  tray.render = fakeRender();
  tray.panel = { isOpen: false, closed: 0, close() { this.closed += 1; } };
  tray.history = { isOpen: false };
  Object.defineProperty(tray, "isOpen", { get: () => tray.view.isOpen });
  tray.protocol = new ProtocolClient("/api/ws/", tray.protocolHooks(), {
    seen: tray.store.seenSeq,
    WebSocket: network.WebSocket,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    random: () => 0.5,
    location: { protocol: "https:", host: "example.test" },
    logger: silentLogger,
  });
  let seq = 0;
  let runId = "run-1";
  const t = {
    tray,
    network,
    clock,
    view: tray.view,
    api: tray.api,
    sent: (type = "chat.send") => network.framesOf(type),
    accept() {
      if (network.last && network.last.readyState === 0) network.last.accept();
    },
    /** The next event of the run (acknowledging it with the first); `run` names a new run. */
    push(type, fields = {}, run = null) {
      if (run) {
        runId = run;
        seq = 0;
      }
      t.accept();
      seq += 1;
      network.last.push(event(runId, seq, type, fields));
    },
  };
  return t;
}

/** Let awaited promises (fake REST answers) settle. */
export const settle = () => new Promise((resolve) => setImmediate(resolve));
