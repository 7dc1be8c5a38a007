// AG-UI: the official HttpAgent (@ag-ui/client) against POST /api/chat/ag-ui on a live server.
// Every event is checked with @ag-ui/core's own zod schemas (the client validates too, and rejects
// anything after RUN_FINISHED / RUN_ERROR or a START without its END).
import { test } from "node:test";
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { BASE, OTHER_TOKEN, RED_PNG, auth, storedMessages, uid } from "./helpers.mjs";

const URL_AGUI = `${BASE}/api/chat/ag-ui`;

function agent(threadId, token) {
  return new HttpAgent({ url: URL_AGUI, threadId, headers: token === null ? {} : auth(token) });
}

/** Run the agent once; every event validated against @ag-ui/core's schemas. */
async function run(a, params = {}) {
  const events = [];
  let error = null;
  try {
    await a.runAgent({ forwardedProps: { page: "home" }, ...params }, {
      onEvent({ event }) {
        EventSchemas.parse(event);
        events.push(event);
      },
    });
  } catch (e) {
    error = e;
  }
  return { events, error, types: events.map((e) => e.type) };
}

const complete = (events) => events.find((e) => e.type === "CUSTOM" && e.name === "pagechat.complete")?.value;

test("a turn with a server tool, then a second run on the same thread stores exactly two user messages", async () => {
  const threadId = uid("thread");
  const a = agent(threadId);
  a.addMessage({ id: uid("u"), role: "user", content: "calculate 6*7" });
  const first = await run(a);
  assert.equal(first.error, null, String(first.error));
  assert.equal(first.types[0], "RUN_STARTED");
  assert.equal(first.events[0].threadId, threadId);
  assert.equal(first.types.at(-1), "RUN_FINISHED");
  const start = first.events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start.toolCallName, "calculate");
  const args = first.events.filter((e) => e.type === "TOOL_CALL_ARGS").map((e) => e.delta).join("");
  assert.match(JSON.parse(args).expression, /6\s*\*\s*7/);
  assert.ok(first.types.indexOf("TOOL_CALL_END") < first.types.indexOf("TOOL_CALL_RESULT"));
  const result = first.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, start.toolCallId);
  assert.match(result.content, /42/);
  const text = first.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
  assert.ok(text.length > 0 && !text.includes("[[tool:"));
  const payload = complete(first.events);
  assert.ok(payload.run_id && payload.conversation_id && payload.tool_history[0].tool_name === "calculate");
  // the agent kept the streamed answer; the second run re-sends all of it plus one new message
  assert.ok(a.messages.some((m) => m.role === "assistant"));
  a.addMessage({ id: uid("u"), role: "user", content: "thanks, and what is 2+3?" });
  const second = await run(a);
  assert.equal(second.error, null, String(second.error));
  assert.equal(second.types.at(-1), "RUN_FINISHED");
  const again = complete(second.events);
  assert.equal(again.conversation_id, payload.conversation_id);
  const stored = await storedMessages(payload.conversation_id);
  assert.deepEqual(stored.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assert.deepEqual(stored.filter((m) => m.role === "user").map((m) => m.content), ["calculate 6*7", "thanks, and what is 2+3?"]);
});

test("a frontend tool round trip: the call under the client's name, no result; the next run carries it", async () => {
  const a = agent(uid("thread-fe"));
  const tools = [{
    name: "change_background",
    description: "Change the background colour of the page.",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  }];
  a.addMessage({ id: uid("u"), role: "user", content: "change the background colour of the page to blue" });
  const first = await run(a, { tools });
  assert.equal(first.error, null, String(first.error));
  const start = first.events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start?.toolCallName, "change_background", first.types.join(","));
  assert.ok(!first.types.includes("TOOL_CALL_RESULT"));
  assert.equal(first.types.at(-1), "RUN_FINISHED");
  const call = a.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === start.toolCallId);
  assert.equal(call.function.name, "change_background");
  a.addMessage({ id: uid("t"), role: "tool", toolCallId: start.toolCallId, content: "The background is blue now." });
  const second = await run(a, { tools });
  assert.equal(second.error, null, String(second.error));
  assert.equal(second.types.at(-1), "RUN_FINISHED");
  const payload = complete(second.events);
  const history = payload.tool_history.find((h) => h.tool_name === "change_background");
  assert.equal(history.output, "The background is blue now.");
  const stored = await storedMessages(payload.conversation_id);
  assert.equal(stored.filter((m) => m.role === "user" && m.interaction_type === "text_input").length, 1);
  assert.equal(stored.at(-1).tool_history.at(-1).output, "The background is blue now.");
});

test("another user's same threadId is that user's own conversation", async () => {
  const threadId = uid("shared");
  const mine = agent(threadId);
  mine.addMessage({ id: uid("u"), role: "user", content: "hello, I am the first user" });
  const a = await run(mine);
  const theirs = agent(threadId, OTHER_TOKEN);
  theirs.addMessage({ id: uid("u"), role: "user", content: "hello, I am someone else" });
  const b = await run(theirs);
  assert.equal(a.error, null);
  assert.equal(b.error, null);
  const ca = complete(a.events).conversation_id;
  const cb = complete(b.events).conversation_id;
  assert.notEqual(ca, cb);
  assert.deepEqual((await storedMessages(ca)).filter((m) => m.role === "user").map((m) => m.content), ["hello, I am the first user"]);
  assert.deepEqual((await storedMessages(cb, OTHER_TOKEN)).filter((m) => m.role === "user").map((m) => m.content), ["hello, I am someone else"]);
  const denied = await fetch(`${BASE}/api/conversations/${ca}/`, { headers: auth(OTHER_TOKEN) });
  assert.equal(denied.status, 404);
});

test("no credentials: refused with 401 and the v1 error body, no stream", async () => {
  const a = agent(uid("anon"), null);
  a.addMessage({ id: uid("u"), role: "user", content: "hi" });
  const { error, events } = await run(a);
  assert.ok(error, "the run must fail");
  assert.equal(error.status, 401);
  assert.equal(error.payload.code, "unauthorized");
  assert.equal(events.length, 0);
});

test("a provider failure is RUN_ERROR with the v1 code", async () => {
  const a = agent(uid("fail"));
  a.addMessage({ id: uid("u"), role: "user", content: "FAIL_OVERLOADED please" });
  const runErrors = [];
  const { events } = await (async () => {
    const events = [];
    try {
      await a.runAgent({}, {
        onEvent({ event }) { EventSchemas.parse(event); events.push(event); },
        onRunErrorEvent({ event }) { runErrors.push(event); },
      });
    } catch { /* the client may reject the run on RUN_ERROR */ }
    return { events };
  })();
  assert.equal(events[0].type, "RUN_STARTED");
  assert.equal(events.at(-1).type, "RUN_ERROR");
  assert.equal(events.at(-1).code, "overloaded");
  assert.equal(runErrors.length, 1);
});

test("a picture in the user message's content (an image part with a data source) is the message's attachment", async () => {
  const a = agent(uid("thread-file"));
  a.addMessage({ id: uid("u"), role: "user", content: [
    { type: "text", text: "what is in this picture?" },
    { type: "image", source: { type: "data", value: RED_PNG, mimeType: "image/png" }, metadata: { filename: "red.png" } },
  ] });
  const { error, events } = await run(a);
  assert.equal(error, null, String(error));
  const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
  assert.match(text, /red\.png/);
  const stored = await storedMessages(complete(events).conversation_id);
  assert.deepEqual(stored[0].attachments.map((x) => [x.name, x.content_type]), [["red.png", "image/png"]]);
});

// Shared state: the agent sends its `state`; the server echoes it (STATE_SNAPSHOT) and sends a server tool's change
// as a JSON Patch (STATE_DELTA), which the client applies itself. `remember_color` is the live server's test tool
// (tests/interop/provider.py): it sets `color`, and `prefs.color` and `prefs.history` inside a nested object.
const statefulAgent = (threadId, initialState) => new HttpAgent({ url: URL_AGUI, threadId, headers: auth(), initialState });

test("shared state: after a server tool changed it, the agent's own state is the server's", async () => {
  const initialState = { theme: "light", prefs: { color: "red", history: ["red"], size: 3 }, note: "</data> is only text here" };
  const a = statefulAgent(uid("thread-state"), initialState);
  a.addMessage({ id: uid("u"), role: "user", content: "remember color blue" });
  const first = await run(a);
  assert.equal(first.error, null, String(first.error));
  assert.deepEqual(first.types.slice(0, 2), ["RUN_STARTED", "STATE_SNAPSHOT"]);
  assert.deepEqual(first.events[1].snapshot, initialState);
  const start = first.events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start?.toolCallName, "remember_color", first.types.join(","));
  const deltas = first.events.filter((e) => e.type === "STATE_DELTA");
  assert.equal(deltas.length, 1);
  assert.ok(first.types.indexOf("TOOL_CALL_END") < first.types.indexOf("STATE_DELTA"));
  assert.equal(first.types.at(-1), "RUN_FINISHED");
  const expected = { theme: "light", note: "</data> is only text here", color: "blue", prefs: { color: "blue", history: ["red", "blue"], size: 3 } };
  assert.deepEqual(a.state, expected);
  assert.match(first.events.find((e) => e.type === "TOOL_CALL_RESULT").content, /blue/);
  // the page changes its state; the next run sends it, and the next change is from there
  a.setState({ ...a.state, theme: "dark" });
  a.addMessage({ id: uid("u"), role: "user", content: "remember color green" });
  const second = await run(a);
  assert.equal(second.error, null, String(second.error));
  assert.deepEqual(second.events[1], { type: "STATE_SNAPSHOT", snapshot: { ...expected, theme: "dark" } });
  assert.equal(second.types.filter((t) => t === "STATE_DELTA").length, 1);
  assert.equal(second.types.at(-1), "RUN_FINISHED");
  assert.deepEqual(a.state, { ...expected, theme: "dark", color: "green", prefs: { color: "green", history: ["red", "blue", "green"], size: 3 } });
});

test("shared state with a frontend tool: the call still ends the run, and the answer's run carries the page's state", async () => {
  const a = statefulAgent(uid("thread-fe-state"), { background: "white" });
  const tools = [{
    name: "change_background",
    description: "Change the background colour of the page.",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  }];
  a.addMessage({ id: uid("u"), role: "user", content: "change the background colour of the page to blue" });
  const first = await run(a, { tools });
  assert.equal(first.error, null, String(first.error));
  assert.deepEqual(first.events[1], { type: "STATE_SNAPSHOT", snapshot: { background: "white" } });
  const start = first.events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start?.toolCallName, "change_background", first.types.join(","));
  assert.ok(!first.types.includes("TOOL_CALL_RESULT") && !first.types.includes("STATE_DELTA"));
  assert.equal(first.types.at(-1), "RUN_FINISHED");
  assert.deepEqual(a.state, { background: "white" });
  // the page's handler runs the tool: it changes the page's state, then answers
  a.setState({ background: "blue" });
  a.addMessage({ id: uid("t"), role: "tool", toolCallId: start.toolCallId, content: "The background is blue now." });
  const second = await run(a, { tools });
  assert.equal(second.error, null, String(second.error));
  assert.deepEqual(second.events[1], { type: "STATE_SNAPSHOT", snapshot: { background: "blue" } });
  assert.equal(second.types.at(-1), "RUN_FINISHED");
  assert.equal(complete(second.events).tool_history.find((h) => h.tool_name === "change_background").output, "The background is blue now.");
  assert.deepEqual(a.state, { background: "blue" });
});

test("a state that is not a JSON object is refused with 400 bad_frame, no stream", async () => {
  for (const state of [["a", "list"], "a string"]) {
    const a = statefulAgent(uid("thread-bad-state"), state);
    a.addMessage({ id: uid("u"), role: "user", content: "hi" });
    const { error, events } = await run(a);
    assert.ok(error, `the run must fail for ${JSON.stringify(state)}`);
    assert.equal(error.status, 400);
    assert.equal(error.payload.code, "bad_frame");
    assert.equal(events.length, 0);
  }
});
