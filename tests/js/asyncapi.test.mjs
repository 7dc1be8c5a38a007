// docs/protocol/asyncapi.yaml is a valid AsyncAPI 3 document by the official parser, with every $ref into
// the protocol's JSON Schema resolved (manage.py chat_api_schema --check keeps it current).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { Parser, fromFile } from "@asyncapi/parser";

const here = path.dirname(fileURLToPath(import.meta.url));
const file = path.join(here, "..", "..", "docs", "protocol", "asyncapi.yaml");

test("asyncapi.yaml parses and validates with @asyncapi/parser", async () => {
  const parser = new Parser();
  const { document, diagnostics } = await fromFile(parser, file).parse();
  const errors = diagnostics.filter((d) => d.severity === 0);
  assert.deepEqual(errors.map((d) => `${d.path.join("/")}: ${d.message}`), []);
  assert.ok(document, "no document");
  assert.equal(document.version(), "3.0.0");
  const names = document.allMessages().all().map((m) => m.name());
  for (const type of ["chat.send", "chat.cancel", "chat.resume", "chat.approve", "status", "text_delta", "tool_start",
    "tool_progress", "tool_complete", "tool_approval", "complete", "error", "cancelled"]) {
    assert.ok(names.includes(type), `message ${type} missing`);
  }
  // the payloads are the protocol's published schemas, resolved from the files beside it
  const send = document.allMessages().all().find((m) => m.name() === "chat.send");
  const props = send.payload().properties();
  assert.ok(props.client_message_id && props.message, "chat.send payload not resolved from frames.schema.json");
  assert.ok(readFileSync(file, "utf8").includes("./events.schema.json#/$defs/"));
});
