/**
 * The protocol v1 client (docs/protocol): one followed run at a time over a reconnecting
 * websocket. It owns the run bookkeeping the server's guarantees rely on:
 *
 * - a chat.send not yet acknowledged is resent on every (re)connect with the SAME
 *   client_message_id (the server is idempotent on it, so a lost ack cannot double-send);
 * - an acknowledged run is resumed on reconnect with chat.resume{after_seq: last seen seq};
 * - events are applied in seq order exactly once: replayed duplicates are dropped, a gap asks
 *   once for the missing events;
 * - terminal events (complete, cancelled, error) end the run; frame-level errors (no seq) are
 *   sorted into "our send was refused", "the run cannot be replayed" and plain errors.
 *
 * No DOM: the owner gets plain callbacks, and the transport's environment can be injected,
 * so this module runs under Node's test runner.
 */
import { ChatSocket } from "./socket.js";

/** Events after which a run sends nothing more. */
export const TERMINAL_EVENTS = Object.freeze(new Set(["complete", "cancelled", "error"]));

// The server lost our stream but not the run: ask again this many times before giving up.
const MAX_RERESUMES = 3;
// Runs we stopped following; their late events must never pass for the ack of a new send.
const RELEASED_MEMORY = 32;

/** RFC 4122 v4; crypto.randomUUID exists only in secure contexts, getRandomValues everywhere. */
export function uuid4() {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === "function") return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A chat.send frame with a fresh client_message_id (a retry is a new attempt, so a new id). */
export function chatSendFrame({ message, conversationId = null, context = {}, interactionType = "text_input", actionMetadata = null, replaceLast = null, attachments = null, language = null, tabId = null, clientTools = null, state = null }) {
  const frame = {
    type: "chat.send",
    client_message_id: uuid4(),
    conversation_id: conversationId,
    message,
    context,
    interaction_type: interactionType,
  };
  if (actionMetadata) frame.action_metadata = actionMetadata;
  // "answer" regenerates the last answer, "question" replaces the last question (protocol addition)
  if (replaceLast) frame.replace_last = replaceLast;
  // ids of uploaded, unsent attachments that become this message's (protocol addition)
  if (attachments?.length) frame.attachments = attachments;
  // the user's language (the page's): the model is told to answer in it (protocol addition)
  if (language) frame.language = language;
  // frontend tools (protocol addition): the tab's own id, the tools it runs itself, and the page's shared state
  if (tabId) frame.tab_id = tabId;
  if (clientTools) frame.client_tools = clientTools;
  if (state) frame.state = state;
  return frame;
}

export class ProtocolClient {
  /**
   * @param {string} url  the websocket URL (a path is resolved against the page's location)
   * @param {object} hooks  all optional:
   *   onEvent(event, run)        a run event, in seq order, each once; after a terminal one the run is over
   *   onAck(run)                 the server acknowledged our chat.send: run.runId is now known
   *   onRefused(error, run)      our chat.send was refused (busy, rate_limited, not_found, ...): the run is over
   *   onUnavailable(error, run)  the server cannot replay the run (resync) or does not know it
   *                              (not_found): the run is over, the stored conversation is the truth
   *   onError(error)             any other frame-level error
   *   onConnectionState(state, following)  socket state (idle|connecting|open|reconnecting) and whether a run is followed
   *   onConnectionLost(run)      reconnecting gave up while a run was followed: the run is over
   * @param {{seen?: Map<string, number>, WebSocket?, setTimeout?, clearTimeout?, random?, location?, backoff?, logger?}} options
   *   `seen` is the last applied seq per run id (the conversation store's map); the rest goes to the socket.
   */
  constructor(url, hooks = {}, { seen = new Map(), ...env } = {}) {
    this.hooks = hooks;
    this.seen = seen;
    this.current = null;
    this.released = [];
    this.socket = new ChatSocket(
      url,
      {
        onMessage: (msg) => this.receive(msg),
        onOpen: () => this.reestablish(),
        onStateChange: () => this.notifyState(),
        wantsConnection: () => this.current !== null,
        onGiveUp: () => this.giveUp(),
      },
      env,
    );
  }

  /** The followed run, {runId, frame, cancelRequested, reresumes}, or null. */
  get run() {
    return this.current;
  }

  get following() {
    return this.current !== null;
  }

  get connectionState() {
    return this.socket.state;
  }

  /** Start a run with a chat.send frame (see chatSendFrame); sent now or as soon as the socket opens. */
  start(frame) {
    if (this.current) throw new Error("a run is already followed; release it first");
    this.current = newRun(null, frame);
    this.notifyState();
    if (!this.socket.sendNow(frame)) this.socket.connect(); // the open hook sends it
    return this.current;
  }

  /** Follow a run this client did not start (after navigation, or a conversation opened from history). */
  follow(runId) {
    if (this.current) throw new Error("a run is already followed; release it first");
    this.current = newRun(runId, null);
    this.notifyState();
    if (this.socket.isOpen) this.reestablish();
    else this.socket.connect();
    return this.current;
  }

  /** Ask the server to stop the run: now, or as soon as its id is known. */
  cancel() {
    const run = this.current;
    if (!run) return false;
    if (run.runId) this.socket.send({ type: "chat.cancel", run_id: run.runId });
    else run.cancelRequested = true;
    return true;
  }

  /** Answer a tool_approval of the followed run. */
  approve(toolUseId, approved) {
    const run = this.current;
    if (!run?.runId) return false;
    this.socket.send({ type: "chat.approve", run_id: run.runId, tool_use_id: toolUseId, approved: Boolean(approved) });
    return true;
  }

  /**
   * Answer a client_tool_call of a run (chat.tool_result): sent now, or when the socket is back. Until the
   * call's tool_complete arrives, a not_found about the run is the server's refusal of this answer (the call had
   * ended already: timed out, or its socket closed), not the run's end.
   */
  toolResult({ runId, toolUseId, tabId, output, isError = false, payload = null, state = null }) {
    if (!runId) return false;
    // a run no longer followed (the person started a new chat meanwhile) still gets its answer: it waits for it
    if (this.current?.runId === runId) this.current.pendingResults += 1;
    this.socket.send({ type: "chat.tool_result", run_id: runId, tool_use_id: toolUseId, tab_id: tabId, output, is_error: Boolean(isError), payload, state });
    return true;
  }

  /**
   * Stop following the run (not a cancel: it still finishes on the server and is saved there).
   * Returns the run that was followed, or null.
   */
  release() {
    const run = this.current;
    if (!run) return null;
    this.current = null;
    if (run.runId) this.remember(run.runId);
    this.notifyState();
    return run;
  }

  /** Close the socket for good (page unload, tests). */
  close() {
    this.current = null;
    this.socket.close();
  }

  // ---- internals ------------------------------------------------------------------------------

  /** On every (re)open: resend an unacknowledged send, or resume where we are. */
  reestablish() {
    const run = this.current;
    if (!run) return;
    if (!run.runId) this.socket.sendNow(run.frame);
    else this.resume(run);
  }

  resume(run) {
    this.socket.sendNow({ type: "chat.resume", run_id: run.runId, after_seq: this.seen.get(run.runId) ?? 0 });
  }

  receive(msg) {
    if (!msg || typeof msg !== "object" || typeof msg.type !== "string") return;
    // Frame-level answers carry no seq (and usually no run_id).
    if (typeof msg.seq !== "number") {
      if (msg.type === "error") this.frameError(msg);
      return;
    }
    const run = this.current;
    if (!run) return; // a run we stopped following
    if (run.runId === null) {
      if (typeof msg.run_id !== "string" || this.released.includes(msg.run_id)) return;
      run.runId = msg.run_id; // the first event acknowledges our chat.send
      this.call("onAck", run);
      if (this.current !== run) return; // the owner let go of it in onAck
      if (run.cancelRequested) this.socket.send({ type: "chat.cancel", run_id: run.runId });
    } else if (msg.run_id !== run.runId) {
      return;
    }
    const known = this.seen.has(run.runId);
    const last = this.seen.get(run.runId) ?? 0;
    if (known && msg.seq <= last) return; // a duplicate replayed after resume
    if (known && msg.seq > last + 1) {
      // A gap should not happen on one socket; ask once for the missing events rather than show holes.
      if (run.gapAt !== last) {
        run.gapAt = last;
        this.resume(run);
      }
      return;
    }
    this.seen.set(run.runId, msg.seq);
    if (msg.type === "tool_complete" && run.pendingResults > 0) run.pendingResults -= 1;
    const terminal = TERMINAL_EVENTS.has(msg.type);
    if (terminal) this.end(run);
    this.call("onEvent", msg, run);
  }

  frameError(msg) {
    const run = this.current;
    if (msg.run_id && msg.run_id !== run?.runId) return; // about a run we no longer follow
    if (msg.code === "resync") {
      // The server can no longer replay what we missed.
      if (run) this.end(run);
      this.call("onUnavailable", msg, run);
      return;
    }
    if (run && run.runId === null) {
      this.end(run);
      this.call("onRefused", msg, run);
      return;
    }
    if (run && msg.run_id === run.runId) {
      if (msg.code === "not_found" && run.pendingResults > 0) {
        run.pendingResults -= 1; // our late answer to a tool call the server had ended: the run goes on
        return;
      }
      if (msg.code === "not_found") {
        this.end(run); // gone, or never ours
        this.call("onUnavailable", msg, run);
        return;
      }
      if (run.reresumes < MAX_RERESUMES) {
        run.reresumes += 1;
        this.resume(run);
        return;
      }
    }
    this.call("onError", msg);
  }

  giveUp() {
    const run = this.current;
    if (!run) return;
    this.end(run);
    this.call("onConnectionLost", run);
  }

  end(run) {
    if (this.current === run) this.current = null;
    if (run.runId) this.remember(run.runId);
    this.notifyState();
  }

  remember(runId) {
    if (this.released.includes(runId)) return;
    this.released.push(runId);
    if (this.released.length > RELEASED_MEMORY) this.released.shift();
  }

  notifyState() {
    this.call("onConnectionState", this.socket.state, this.current !== null);
  }

  call(name, ...args) {
    this.hooks[name]?.(...args);
  }
}

function newRun(runId, frame) {
  return { runId, frame, cancelRequested: false, reresumes: 0, gapAt: null, pendingResults: 0 };
}
