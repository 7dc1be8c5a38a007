// The controller's composition (chat/static/chat/controller/features.js): each name belongs to one feature.
import { test } from "node:test";
import assert from "node:assert/strict";

import { FEATURES, featureState } from "../../chat/static/chat/controller/features.js";

test("no two features define the same method, and no method shadows a feature's state", () => {
  const owner = new Map();
  for (const [feature, methods] of Object.entries(FEATURES)) {
    for (const name of Object.keys(methods)) {
      assert.equal(owner.get(name), undefined, `${name} is defined by ${owner.get(name)} and ${feature}`);
      owner.set(name, feature);
    }
  }
  for (const name of Object.keys(featureState())) assert.equal(owner.get(name), undefined, name);
});

test("the methods pages and views call are all there", () => {
  const all = Object.assign({}, ...Object.values(FEATURES));
  for (const name of ["open", "close", "toggle", "send", "newConversation", "reset", "notice", "openPayload", "loadConversation",
    "copy", "feedback", "regenerate", "continueAnswer", "beginEdit", "markPayload", "acceptWith", "proposalAction",
    "discardProposal", "openDiagnostics", "renameConversation"]) {
    assert.equal(typeof all[name], "function", name);
  }
});
