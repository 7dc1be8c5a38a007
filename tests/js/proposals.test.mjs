// One accept path (chat/static/chat/proposals.js): which suggested actions accept or reject an answer's proposal.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { acceptingAction, acceptsProposal, decidesProposal, rejectsProposal, sameData } from "../../chat/static/chat/proposals.js";

const form = { stream_name: "Oncology Intelligence", report_frequency: "weekly", channels: [{ name: "Trials", type: "clinical", keywords: ["egfr"] }] };
const payload = { payload_id: "p1", type: "research_stream_form", data: form, summary: "" };
const create = { label: "Accept & Create stream", action: "create_stream", handler: "server", data: structuredClone(form), token: "t" };
const cancel = { label: "Cancel", action: "cancel", handler: "client" };

describe("sameData", () => {
  test("objects by keys in any order, arrays by position", () => {
    assert.ok(sameData({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }));
    assert.ok(!sameData({ a: 1 }, { a: 1, b: 2 }));
    assert.ok(!sameData([1, 2], [2, 1]));
    assert.ok(!sameData({ a: "1" }, { a: 1 }));
    assert.ok(sameData(null, undefined) && !sameData(null, {}));
    // an unset optional field: null in the payload the server checked, absent from the model's action data
    assert.ok(sameData({ purpose: "Track", stream_name: null }, { purpose: "Track" }));
    assert.ok(!sameData([], {}));
  });
});

describe("linking actions to a proposal", () => {
  test("the server action with the proposal's data accepts it; cancel rejects it", () => {
    assert.ok(acceptsProposal(create, payload));
    assert.ok(rejectsProposal(cancel) && decidesProposal(cancel, payload));
    assert.ok(decidesProposal(create, payload));
  });

  test("a server action with part of the proposal's data (a model left the reasoning out) still applies it", () => {
    const proposal = { payload_id: "p2", type: "schema_proposal", data: { proposed_changes: { purpose: "Track" }, confidence: "high", reasoning: "why" } };
    assert.ok(acceptsProposal({ action: "update_config", handler: "server", data: { proposed_changes: { purpose: "Track" } } }, proposal));
    // another value, another key, or no data at all is another action
    assert.ok(!acceptsProposal({ action: "update_config", handler: "server", data: { proposed_changes: { purpose: "Other" } } }, proposal));
    assert.ok(!acceptsProposal({ action: "update_config", handler: "server", data: { queries: ["x"] } }, proposal));
    assert.ok(!acceptsProposal({ action: "run_test_report", handler: "server", data: {} }, proposal));
    assert.ok(!acceptsProposal({ action: "run_test_report", handler: "server" }, proposal));
  });

  test("client actions other than cancel, and actions of an answer without a proposal, decide nothing", () => {
    assert.ok(!decidesProposal({ action: "navigate", handler: "client", data: form }, payload));
    assert.ok(!decidesProposal({ action: "restart", handler: "client" }, payload));
    assert.ok(!decidesProposal(create, null) && !decidesProposal(cancel, null));
  });

  test("acceptingAction: the first server action of the answer that applies its proposal", () => {
    const other = { label: "Run test report", action: "run_test_report", handler: "server", data: { stream_id: 1 } };
    assert.equal(acceptingAction({ custom_payload: payload, suggested_actions: [other, cancel, create] }), create);
    assert.equal(acceptingAction({ custom_payload: payload, suggested_actions: [other, cancel] }), null);
    assert.equal(acceptingAction({ custom_payload: null, suggested_actions: [create] }), null);
    assert.equal(acceptingAction({ custom_payload: payload }), null);
  });
});
