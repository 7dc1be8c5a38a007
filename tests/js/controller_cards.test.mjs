// Cards and proposals (chat/static/chat/controller/cards.js): Accept through the answer's action, reject, discard.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { settle, testTray } from "./tray_fakes.mjs";

const payload = { payload_id: "p1", type: "research_stream_form", data: { stream_name: "Oncology" } };
const create = { label: "Create stream", action: "create_stream", handler: "server", data: { stream_name: "Oncology" }, token: "tok" };

function withProposal() {
  const t = testTray();
  t.tray.store.conversationId = 7;
  t.tray.loaded = true;
  t.tray.store.addMessage({ role: "user", content: "Make a stream", interaction_type: "text_input" });
  t.tray.store.addMessage({ id: 21, role: "assistant", content: "Here it is", custom_payload: payload, suggested_actions: [create] });
  return t;
}

describe("a proposal", () => {
  test("the latest answer's undecided proposal is accepted through its server action; no other", () => {
    const t = withProposal();
    assert.equal(t.tray.proposalAction(payload), create);
    assert.equal(t.tray.proposalAction({ ...payload, payload_id: "p0" }), null); // an older answer's: its buttons are gone
    t.tray.store.setPayloadOutcome("p1", "rejected");
    assert.equal(t.tray.proposalAction(payload), null);
  });

  test("Accept on the card: decided, saved with the message, and sent as the action's button is", async () => {
    const t = withProposal();
    t.tray.acceptWith(create, payload);
    await settle();
    assert.equal(t.tray.store.payloadOutcome("p1"), "accepted");
    assert.deepEqual(t.api.calls, [["markMessage", 21, { payload_outcome: "accepted" }]]);
    assert.deepEqual(t.view.dispatched, [["payload-outcome", { payload, outcome: "accepted" }]]);
    assert.deepEqual(t.view.calls.filter((c) => c[0] === "stepAside"), []); // the answer follows in the tray
    t.accept();
    const [frame] = t.sent();
    assert.equal(frame.interaction_type, "action_executed");
    assert.deepEqual(frame.action_metadata, { action_identifier: "create_stream", action_data: { stream_name: "Oncology" }, token: "tok" });
  });

  test("Accept while a reply comes is refused and decides nothing", () => {
    const t = withProposal();
    t.tray.send("Something else");
    t.tray.acceptWith(create, payload);
    assert.equal(t.tray.store.payloadOutcome("p1"), undefined);
    assert.match(t.view.notices.at(-1)[0], /wait for the current reply/);
  });

  test("discarding closes the card and rejects the proposal; the conversation stays", () => {
    const t = withProposal();
    t.tray.discardProposal();
    assert.equal(t.tray.panel.closed, 1);
    assert.equal(t.tray.store.payloadOutcome("p1"), "rejected");
    assert.equal(t.tray.store.messages.length, 2);
    assert.equal(t.view.notices.at(-1)[0], "Proposal discarded. The conversation is kept.");
  });

  test("a failed save of the decision is said; a proposal without an id is not decided", async () => {
    const t = withProposal();
    t.api.markMessage = async () => { throw new Error("down"); };
    t.tray.markPayload(payload, "accepted");
    await settle();
    assert.deepEqual(t.view.notices, [["Could not save that decision.", "error"]]);
    assert.deepEqual(t.view.calls.filter((c) => c[0] === "stepAside"), [["stepAside"]]); // a form on the page to see
    t.tray.markPayload({ type: "x" }, "accepted");
    assert.equal(t.view.dispatched.length, 1);
  });
});
