/**
 * The websocket transport of protocol v1. It knows nothing about runs: it connects lazily,
 * reconnects with capped exponential backoff while its owner still needs it, queues frames
 * sent while closed, and lets the owner re-establish its state (resend / resume) first on
 * every open, before the queue is flushed.
 *
 * No DOM: the WebSocket class, timers and randomness can be injected, so it runs under Node.
 */

// WebSocket.readyState values (not read from a global WebSocket, which Node 20 lacks).
const CONNECTING = 0;
const OPEN = 1;

export const BACKOFF = Object.freeze({
  baseMs: 250,
  maxMs: 5000,
  maxAttempts: 12, // about 45 s of trying before the owner is told to give up
});

/** Turn "/api/ws/" into ws(s)://host/api/ws/ for `location`; absolute ws(s) URLs pass through. */
export function resolveSocketUrl(url, location = globalThis.location) {
  if (/^wss?:\/\//i.test(url)) return url;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${url.startsWith("/") ? "" : "/"}${url}`;
}

export class ChatSocket {
  /**
   * @param {string} url
   * @param {{onMessage(msg), onOpen(), onStateChange(state), wantsConnection(): boolean, onGiveUp()}} hooks
   *   onOpen runs before queued frames are flushed; wantsConnection decides whether a dropped
   *   socket is worth reconnecting (queued frames always are); onGiveUp runs when reconnecting
   *   failed `maxAttempts` times in a row.
   * @param {{WebSocket?, setTimeout?, clearTimeout?, random?, location?, backoff?, logger?}} env
   *   injectable environment (defaults: the globals).
   */
  constructor(url, hooks, env = {}) {
    this.WebSocket = env.WebSocket ?? globalThis.WebSocket;
    this.setTimeout = env.setTimeout ?? globalThis.setTimeout.bind(globalThis);
    this.clearTimeout = env.clearTimeout ?? globalThis.clearTimeout.bind(globalThis);
    this.random = env.random ?? Math.random;
    this.backoff = { ...BACKOFF, ...(env.backoff || {}) };
    this.logger = env.logger ?? console;
    this.url = resolveSocketUrl(url, env.location ?? globalThis.location);
    this.hooks = hooks;
    this.ws = null;
    this.outbox = [];
    this.attempts = 0;
    this.timer = null;
    this.state = "idle"; // idle | connecting | open | reconnecting
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === OPEN;
  }

  /** Open the socket if it is not open or opening already. */
  connect() {
    if (this.ws && (this.ws.readyState === OPEN || this.ws.readyState === CONNECTING)) return;
    this.clearTimeout(this.timer);
    this.timer = null;
    this.setState(this.attempts ? "reconnecting" : "connecting");
    let ws;
    try {
      ws = new this.WebSocket(this.url);
    } catch (err) {
      this.logger.error("chat socket: cannot connect", err);
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (this.ws !== ws) return;
      this.attempts = 0;
      this.setState("open");
      this.safely(() => this.hooks.onOpen?.());
      const queued = this.outbox.splice(0);
      for (const frame of queued) this.sendNow(frame);
    });
    ws.addEventListener("message", (event) => {
      if (this.ws !== ws) return;
      let msg;
      try {
        msg = JSON.parse(event.data);
      } catch {
        this.logger.warn("chat socket: ignoring a non-JSON frame");
        return;
      }
      this.safely(() => this.hooks.onMessage(msg));
    });
    ws.addEventListener("close", () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.outbox.length || this.hooks.wantsConnection?.()) this.scheduleReconnect();
      else this.setState("idle");
    });
    // An error is always followed by close; reconnecting is handled there.
  }

  /** Send now if open, else queue and make sure a connection is on its way. */
  send(frame) {
    if (this.isOpen) {
      this.sendNow(frame);
    } else {
      this.outbox.push(frame);
      this.connect();
    }
  }

  /** Send only if open; frames the owner rebuilds itself on open (send, resume) use this. */
  sendNow(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Close for good (tests and page unload); no reconnect. */
  close() {
    this.clearTimeout(this.timer);
    this.timer = null;
    this.outbox = [];
    const ws = this.ws;
    this.ws = null;
    ws?.close();
    this.setState("idle");
  }

  scheduleReconnect() {
    const { baseMs, maxMs, maxAttempts } = this.backoff;
    if (this.attempts >= maxAttempts) {
      this.attempts = 0;
      this.outbox = [];
      this.setState("idle");
      this.safely(() => this.hooks.onGiveUp?.());
      return;
    }
    // Jitter (x0.75 .. x1.25) so many tabs that lost the same server do not return in step.
    const delay = Math.min(maxMs, baseMs * 2 ** this.attempts) * (0.75 + this.random() * 0.5);
    this.attempts += 1;
    this.setState("reconnecting");
    this.clearTimeout(this.timer);
    this.timer = this.setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.safely(() => this.hooks.onStateChange?.(state));
  }

  // A bug in a hook must never kill the socket's event handling.
  safely(fn) {
    try {
      fn();
    } catch (err) {
      this.logger.error("chat socket: handler failed", err);
    }
  }
}
