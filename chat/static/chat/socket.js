/**
 * WebSocket client for protocol v1. It knows nothing about runs: it connects lazily,
 * reconnects with capped exponential backoff while the tray still needs it, queues frames
 * sent while closed, and lets the tray re-establish its state (resend / resume) first on
 * every open before the queue is flushed.
 */

const BASE_DELAY_MS = 250;
const MAX_DELAY_MS = 5000;
const MAX_ATTEMPTS = 12; // about 45 s of trying before the tray is told to give up

/** Turn "/ws/chat/" into ws(s)://host/ws/chat/; absolute ws(s) URLs pass through. */
export function resolveSocketUrl(url) {
  if (/^wss?:\/\//i.test(url)) return url;
  const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${window.location.host}${url.startsWith("/") ? "" : "/"}${url}`;
}

export class ChatSocket {
  /**
   * @param {string} url
   * @param {{onEvent(msg), onOpen(), onStateChange(state), wantsConnection(): boolean, onGiveUp()}} hooks
   *   onOpen runs before queued frames are flushed; wantsConnection decides whether a dropped
   *   socket is worth reconnecting (an active run or queued frames); onGiveUp runs when
   *   reconnecting failed too many times in a row.
   */
  constructor(url, hooks) {
    this.url = resolveSocketUrl(url);
    this.hooks = hooks;
    this.ws = null;
    this.outbox = [];
    this.attempts = 0;
    this.timer = null;
    this.state = "idle"; // idle | connecting | open | reconnecting
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** Open the socket if it is not open or opening already. */
  connect() {
    if (this.ws && (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.setState(this.attempts ? "reconnecting" : "connecting");
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      console.error("chat socket: cannot connect", err);
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
        console.warn("chat socket: ignoring a non-JSON frame");
        return;
      }
      this.safely(() => this.hooks.onEvent(msg));
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

  /** Send only if open; frames the tray rebuilds itself on open (send, resume) use this. */
  sendNow(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** Close for good (tests and page unload); no reconnect. */
  close() {
    clearTimeout(this.timer);
    this.timer = null;
    this.outbox = [];
    const ws = this.ws;
    this.ws = null;
    ws?.close();
    this.setState("idle");
  }

  scheduleReconnect() {
    if (this.attempts >= MAX_ATTEMPTS) {
      this.attempts = 0;
      this.outbox = [];
      this.setState("idle");
      this.safely(() => this.hooks.onGiveUp?.());
      return;
    }
    const delay = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** this.attempts) * (0.75 + Math.random() * 0.5);
    this.attempts += 1;
    this.setState("reconnecting");
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
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
      console.error("chat socket: handler failed", err);
    }
  }
}
