// Test doubles for the tray's DOM-free modules: a scriptable WebSocket class and a manual clock.

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;

/**
 * A fake server side: `network.WebSocket` is the class to inject; every socket the client
 * opens is recorded in `network.sockets`; the test accepts, feeds, and drops them.
 */
export function fakeNetwork() {
  const network = { sockets: [] };
  network.WebSocket = class FakeWebSocket {
    constructor(url) {
      this.url = url;
      this.readyState = CONNECTING;
      this.sent = [];
      this.listeners = {};
      network.sockets.push(this);
    }

    addEventListener(type, fn) {
      (this.listeners[type] ||= []).push(fn);
    }

    send(data) {
      if (this.readyState !== OPEN) throw new Error("send on a socket that is not open");
      this.sent.push(JSON.parse(data));
    }

    close() {
      if (this.readyState === CLOSED) return;
      this.readyState = CLOSED;
      this.emit("close", { code: 1000 });
    }

    emit(type, event) {
      for (const fn of this.listeners[type] || []) fn(event);
    }

    // ---- the server's side --------------------------------------------------------------------

    accept() {
      this.readyState = OPEN;
      this.emit("open", {});
    }

    /** Deliver a frame (an object is JSON-encoded; a string goes as is). */
    push(frame) {
      this.emit("message", { data: typeof frame === "string" ? frame : JSON.stringify(frame) });
    }

    /** The network drops the connection. */
    drop() {
      this.readyState = CLOSED;
      this.emit("close", { code: 1006 });
    }
  };
  Object.defineProperty(network, "last", { get: () => network.sockets.at(-1) });
  /** Every frame the client sent, over all sockets, in order. */
  network.frames = () => network.sockets.flatMap((s) => s.sent);
  network.framesOf = (type) => network.frames().filter((f) => f.type === type);
  return network;
}

/** Timers the test fires by hand; `delays` records every requested delay. */
export function fakeClock() {
  const timers = new Map();
  let nextId = 1;
  const clock = {
    delays: [],
    setTimeout(fn, ms) {
      const id = nextId++;
      timers.set(id, fn);
      clock.delays.push(ms);
      return id;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
    get pending() {
      return timers.size;
    },
    /** Fire the oldest pending timer; false when there is none. */
    fire() {
      const [id, fn] = timers.entries().next().value ?? [];
      if (!id) return false;
      timers.delete(id);
      fn();
      return true;
    },
  };
  return clock;
}

/** A run event as the server sends it. */
export function event(runId, seq, type, fields = {}) {
  return { type, run_id: runId, seq, conversation_id: 7, ...fields };
}

/** Records every hook call as [name, ...args]. */
export function recordingHooks() {
  const calls = [];
  const hooks = new Proxy(
    {},
    {
      get: (_, name) => (...args) => calls.push([name, ...args]),
    },
  );
  return { hooks, calls, named: (name) => calls.filter((c) => c[0] === name) };
}

export const silentLogger = { error() {}, warn() {} };
