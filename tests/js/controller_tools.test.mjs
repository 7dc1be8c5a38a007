// Frontend tools and page state (chat/static/chat/tools.js, controller/tools.js): registering, what chat.send carries,
// running a client_tool_call once and answering it with chat.tool_result, and the state a run sends back.
import { afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";

import {
  TAB_ID,
  applyState,
  clientToolDefinitions,
  getState,
  onState,
  registerTool,
  resetTools,
  resultOf,
  setState,
  unregisterTool,
} from "../../chat/static/chat/tools.js";
import { PAGE_LEFT } from "../../chat/static/chat/controller/tools.js";
import { api } from "../../chat/static/chat/pagechat.js";
import { settle, testTray } from "./tray_fakes.mjs";

afterEach(() => resetTools());

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function asking(config = {}) {
  const t = testTray({ config });
  t.tray.send("Question");
  t.accept();
  return t;
}

/** The run calls a tool of this tab (or of `tab`). */
function call(t, tool, input = {}, { id = "tu1", tab = TAB_ID } = {}) {
  t.push("tool_start", { tool, input, tool_use_id: id, title: "A tool" });
  t.push("client_tool_call", { tool, input, tool_use_id: id, tab_id: tab, timeout_ms: 30000, title: "A tool" });
}

describe("registering", () => {
  test("a tool is offered with every chat.send, with the tab's id and the page's state", () => {
    registerTool({ name: "switch_tab", title: "Switch tab", description: "Open a tab", handler: () => "ok",
      parameters: { type: "object", properties: { tab: { type: "string", enum: ["a", "b"] } }, required: ["tab"] } });
    registerTool({ name: "ping", handler: () => "pong", requiresApproval: true });
    setState({ tab: "a" });
    const t = asking();
    const [frame] = t.sent();
    assert.match(frame.tab_id, UUID4);
    assert.equal(frame.tab_id, TAB_ID);
    assert.deepEqual(frame.client_tools, [
      { name: "switch_tab", title: "Switch tab", description: "Open a tab", requires_approval: false,
        parameters: { type: "object", properties: { tab: { type: "string", enum: ["a", "b"] } }, required: ["tab"] } },
      { name: "ping", description: "", requires_approval: true, parameters: { type: "object", properties: {} } },
    ]);
    assert.deepEqual(frame.state, { tab: "a" });
  });

  test("with no tools the send still says which tab it is, and an empty state", () => {
    const [frame] = asking().sent();
    assert.deepEqual([frame.tab_id, frame.client_tools, frame.state], [TAB_ID, [], {}]);
  });

  test("names, keys and sizes are checked at registration, with a clear error", () => {
    const ok = { handler: () => "" };
    assert.throws(() => registerTool({ ...ok, name: "has space" }), /a tool name is 1 to 64 letters/);
    assert.throws(() => registerTool({ ...ok, name: "x".repeat(65) }), /a tool name/);
    assert.throws(() => registerTool({ ...ok, name: "" }), /a tool name/);
    assert.throws(() => registerTool({ name: "a" }), /handler of the tool a must be a function/);
    assert.throws(() => registerTool({ ...ok, name: "a", handle: 1 }), /unknown key\(s\) for the tool a: handle/);
    assert.throws(() => registerTool({ ...ok, name: "a", parameters: { type: "string" } }), /JSON Schema object/);
    assert.throws(() => registerTool({ ...ok, name: "a", parameters: { type: "object", description: "x".repeat(9000) } }), /8192 bytes/);
    assert.throws(() => registerTool({ ...ok, name: "a", title: "t".repeat(81) }), /at most 80/);
    assert.throws(() => registerTool({ ...ok, name: "a", description: "d".repeat(1001) }), /at most 1000/);
    assert.throws(() => registerTool({ ...ok, name: "a", requiresApproval: "yes" }), /true or false/);
    assert.throws(() => registerTool("a"), /takes one object/);
    for (let i = 0; i < 16; i += 1) registerTool({ ...ok, name: `t${i}` });
    assert.throws(() => registerTool({ ...ok, name: "t16" }), /at most 16 tools/);
    registerTool({ ...ok, name: "t3", title: "Again" }); // the same name replaces it
    assert.equal(clientToolDefinitions().length, 16);
    assert.equal(unregisterTool("t3"), true);
    assert.equal(unregisterTool("t3"), false);
    const remove = registerTool({ ...ok, name: "t16" });
    assert.equal(remove(), true);
    assert.equal(clientToolDefinitions().length, 15);
  });

  test("the public API has them, on the module's `api` (window.pagechat) too", () => {
    for (const name of ["registerTool", "unregisterTool", "setState", "getState", "onState"]) assert.equal(typeof api[name], "function", name);
  });
});

describe("running a call", () => {
  test("this tab's call runs the handler with the arguments and the tray; its text goes back once", async () => {
    let seen = null;
    registerTool({ name: "switch_tab", handler: (args, ctx) => { seen = [args, ctx.tray]; return `Switched to ${args.tab}`; } });
    const t = asking();
    call(t, "switch_tab", { tab: "presentation" });
    await settle();
    assert.deepEqual(seen, [{ tab: "presentation" }, t.tray]);
    assert.deepEqual(t.sent("chat.tool_result"), [{
      type: "chat.tool_result", run_id: "run-1", tool_use_id: "tu1", tab_id: TAB_ID, output: "Switched to presentation",
      is_error: false, payload: null, state: null,
    }]);
  });

  test("an async handler's {text, payload} is the output and the card", async () => {
    registerTool({ name: "later", handler: async () => { await settle(); return { text: "found 2", payload: { type: "x", data: { n: 2 } } }; } });
    const t = asking();
    call(t, "later");
    assert.deepEqual(t.sent("chat.tool_result"), []); // not before the handler's promise settles
    for (let i = 0; i < 4; i += 1) await settle();
    const [result] = t.sent("chat.tool_result");
    assert.deepEqual([result.output, result.is_error, result.payload], ["found 2", false, { type: "x", data: { n: 2 } }]);
  });

  test("a handler that throws answers is_error with its message; one that returns too much, an error too", async () => {
    registerTool({ name: "boom", handler: () => { throw new Error("no such tab"); } });
    registerTool({ name: "rejects", handler: () => Promise.reject(new Error("x".repeat(500))) });
    registerTool({ name: "long", handler: () => "y".repeat(20001) });
    const t = asking();
    call(t, "boom", {}, { id: "a" });
    call(t, "rejects", {}, { id: "b" });
    call(t, "long", {}, { id: "c" });
    await settle();
    const results = Object.fromEntries(t.sent("chat.tool_result").map((r) => [r.tool_use_id, r]));
    assert.deepEqual([results.a.is_error, results.a.output], [true, "the handler failed: no such tab"]);
    assert.equal(results.b.is_error, true);
    assert.equal(results.b.output.length, 300);
    assert.ok(results.b.output.startsWith("the handler failed: xxx"));
    assert.deepEqual([results.c.is_error, results.c.output], [true, "the handler returned more than 20000 characters"]);
  });

  test("exactly 20000 characters pass; nothing returned is 'done'", () => {
    assert.deepEqual(resultOf("z".repeat(20000)), { output: "z".repeat(20000), is_error: false, payload: null });
    assert.deepEqual(resultOf(undefined), { output: "done", is_error: false, payload: null });
    assert.equal(resultOf({ text: "ok", payload: { big: "p".repeat(17000) } }).is_error, true);
    assert.equal(resultOf({ text: "ok", payload: [1] }).is_error, true);
  });

  test("another tab's call only shows the card: nothing runs, nothing is answered", async () => {
    let runs = 0;
    registerTool({ name: "switch_tab", handler: () => { runs += 1; return "ok"; } });
    const t = asking();
    call(t, "switch_tab", {}, { tab: "some-other-tab" });
    await settle();
    assert.equal(runs, 0);
    assert.deepEqual(t.sent("chat.tool_result"), []);
    assert.equal(t.tray.live.toolHistory.length, 1); // tool_start's card
  });

  test("a call replayed after a resume is not run again, nor answered twice", async () => {
    let runs = 0;
    registerTool({ name: "switch_tab", handler: () => { runs += 1; return "ok"; } });
    const t = asking();
    call(t, "switch_tab");
    await settle();
    // the same call again (a resume that replays it with new seqs, as after a reload of the run's log)
    t.push("client_tool_call", { tool: "switch_tab", input: {}, tool_use_id: "tu1", tab_id: TAB_ID, timeout_ms: 30000 });
    await settle();
    assert.equal(runs, 1);
    assert.equal(t.sent("chat.tool_result").length, 1);
  });

  test("a call while its handler still runs is not run a second time", async () => {
    let runs = 0;
    let finish;
    registerTool({ name: "slow", handler: () => { runs += 1; return new Promise((resolve) => { finish = resolve; }); } });
    const t = asking();
    call(t, "slow");
    t.push("client_tool_call", { tool: "slow", input: {}, tool_use_id: "tu1", tab_id: TAB_ID, timeout_ms: 30000 });
    await settle();
    assert.equal(runs, 1);
    finish("done at last");
    await settle();
    assert.deepEqual(t.sent("chat.tool_result").map((r) => r.output), ["done at last"]);
  });

  test("a tool the page no longer has is an error the model reads", async () => {
    const t = asking();
    call(t, "gone");
    await settle();
    const [result] = t.sent("chat.tool_result");
    assert.deepEqual([result.is_error, result.output], [true, "this page has no tool named gone"]);
  });

  test("leaving the page while a handler runs answers with the error at once; the late result is dropped", async () => {
    let finish;
    registerTool({ name: "slow", handler: () => new Promise((resolve) => { finish = resolve; }) });
    const t = asking();
    call(t, "slow");
    await settle();
    t.tray.leavePage();
    finish("too late");
    await settle();
    const results = t.sent("chat.tool_result");
    assert.deepEqual(results.map((r) => [r.output, r.is_error]), [[PAGE_LEFT, true]]);
    t.tray.leavePage(); // a second pagehide: nothing more
    assert.equal(t.sent("chat.tool_result").length, 1);
  });

  test("a call whose run the tray stopped following (a new chat meanwhile) is still answered", async () => {
    let finish;
    registerTool({ name: "slow", handler: () => new Promise((resolve) => { finish = resolve; }) });
    const t = asking();
    call(t, "slow");
    await settle();
    t.tray.endLive();
    finish("done anyway");
    await settle();
    assert.deepEqual(t.sent("chat.tool_result").map((r) => [r.run_id, r.output]), [["run-1", "done anyway"]]);
  });

  test("a not_found for a late answer (the server had ended the call) does not end the run", async () => {
    registerTool({ name: "t", handler: () => "late" });
    const t = asking();
    call(t, "t");
    await settle();
    t.network.last.push({ type: "error", code: "not_found", message: "no such call", run_id: "run-1" });
    assert.equal(t.tray.protocol.following, true);
    assert.ok(t.tray.live);
    t.push("tool_complete", { tool: "t", index: 0 });
    t.push("complete", { payload: { message: "Done", message_id: 3 } });
    assert.equal(t.tray.store.messages.at(-1).content, "Done");
  });
});

describe("page state", () => {
  test("setState merges keys (null removes one), replace replaces, getState is a copy; bounds are checked", () => {
    setState({ tab: "semantic", open: true });
    setState({ open: null, count: 2 });
    assert.deepEqual(getState(), { tab: "semantic", count: 2 });
    getState().tab = "mutated";
    assert.equal(getState().tab, "semantic");
    setState({ only: 1 }, { replace: true });
    assert.deepEqual(getState(), { only: 1 });
    assert.throws(() => setState({ big: "s".repeat(17000) }), /at most 16384 bytes/);
    assert.throws(() => setState([1]), /setState takes an object/);
    assert.deepEqual(getState(), { only: 1 });
  });

  test("a state event replaces the state and calls onState listeners with (state, delta)", () => {
    setState({ tab: "semantic" });
    const seen = [];
    const off = onState((state, delta) => seen.push([state, delta]));
    const t = asking();
    const delta = [{ op: "replace", path: "/tab", value: "presentation" }];
    t.push("state", { state: { tab: "presentation" }, delta });
    assert.deepEqual(getState(), { tab: "presentation" });
    assert.deepEqual(seen, [[{ tab: "presentation" }, delta]]);
    off();
    applyState({ tab: "x" }, []);
    assert.equal(seen.length, 1);
  });

  test("a handler that changes the state sends the new state back with its result; one that does not, none", async () => {
    setState({ tab: "semantic" });
    registerTool({ name: "switch_tab", handler: (args, { tray }) => { tray.setState({ tab: args.tab }); return "ok"; } });
    registerTool({ name: "look", handler: () => "nothing changed" });
    const t = asking();
    call(t, "switch_tab", { tab: "retrieval" }, { id: "a" });
    call(t, "look", {}, { id: "b" });
    await settle();
    const results = Object.fromEntries(t.sent("chat.tool_result").map((r) => [r.tool_use_id, r.state]));
    assert.deepEqual(results, { a: { tab: "retrieval" }, b: null });
  });
});
