// The AI SDK: the `ai` package's DefaultChatTransport (what useChat uses by default) against
// POST /api/chat/ai-sdk on a live server, read with readUIMessageStream. Every chunk is checked
// with the package's own uiMessageChunkSchema (the transport parses with it too).
import { test } from "node:test";
import assert from "node:assert/strict";
import { DefaultChatTransport, readUIMessageStream, uiMessageChunkSchema } from "ai";
import { BASE, RED_PNG, auth, storedMessages, uid } from "./helpers.mjs";

const transport = new DefaultChatTransport({ api: `${BASE}/api/chat/ai-sdk`, headers: auth(), body: { page: "home" } });

async function send(chatId, messages, extra = {}) {
  const stream = await transport.sendMessages({
    chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined, ...extra,
  });
  const [forSchema, forReader] = stream.tee();
  const chunks = [];
  const checked = (async () => {
    for await (const chunk of forSchema) {
      const result = await uiMessageChunkSchema().validate(chunk);
      assert.ok(result.success, `${JSON.stringify(chunk)}: ${result.error}`);
      chunks.push(chunk);
    }
  })();
  const errors = [];
  let last;
  for await (const message of readUIMessageStream({ stream: forReader, onError: (e) => errors.push(e) })) {
    last = message;
  }
  await checked;
  return { message: last, chunks, errors };
}

const userMessage = (text) => ({ id: uid("m"), role: "user", parts: [{ type: "text", text }] });

test("text, a dynamic tool part and the data-pagechat-complete part; a second message continues the chat", async () => {
  const chatId = uid("chat");
  const first = userMessage("calculate 6*7");
  const { message, chunks, errors } = await send(chatId, [first]);
  assert.deepEqual(errors, []);
  assert.equal(chunks[0].type, "start");
  assert.equal(chunks.at(-1).type, "finish");
  const types = message.parts.map((p) => p.type);
  assert.ok(types.includes("text"), types.join(","));
  const tool = message.parts.find((p) => p.type === "dynamic-tool");
  assert.equal(tool.toolName, "calculate");
  assert.equal(tool.state, "output-available");
  assert.match(String(tool.output), /42/);
  const done = message.parts.find((p) => p.type === "data-pagechat-complete");
  assert.ok(done.data.run_id && done.data.conversation_id);
  assert.equal(message.id, String(done.data.message_id));
  const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  assert.ok(text.length > 0 && !text.includes("[[tool:"));
  // the transport re-sends the history; only the new message is taken
  const second = await send(chatId, [first, { ...message }, userMessage("and 2+3?")]);
  const again = second.message.parts.find((p) => p.type === "data-pagechat-complete").data;
  assert.equal(again.conversation_id, done.data.conversation_id);
  const stored = await storedMessages(done.data.conversation_id);
  assert.deepEqual(stored.filter((m) => m.role === "user").map((m) => m.content), ["calculate 6*7", "and 2+3?"]);
});

test("a provider failure: an error chunk and a data-pagechat-error part", async () => {
  const { message, chunks, errors } = await send(uid("chat-fail"), [userMessage("FAIL_OVERLOADED now")]);
  const error = chunks.find((c) => c.type === "error");
  assert.match(error.errorText, /^overloaded: /);
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /^overloaded: /);
  const part = message.parts.find((p) => p.type === "data-pagechat-error");
  assert.equal(part.data.code, "overloaded");
});

test("regenerate replaces the last answer; the resume request is 204 when nothing runs", async () => {
  const chatId = uid("chat-regen");
  const question = userMessage("calculate 2+2");
  const { message } = await send(chatId, [question]);
  const { message: regenerated } = await send(chatId, [question], { trigger: "regenerate-message", messageId: message.id });
  assert.notEqual(regenerated.id, message.id);
  const done = regenerated.parts.find((p) => p.type === "data-pagechat-complete").data;
  const stored = await storedMessages(done.conversation_id);
  assert.deepEqual(stored.map((m) => m.role), ["user", "assistant"]);
  assert.equal(String(stored[1].id), regenerated.id);
  assert.equal(await transport.reconnectToStream({ chatId }), null);  // 204: no running turn
});

test("a picture sent as useChat sends a picked file (a file part with a data: URL) is the message's attachment", async () => {
  const question = { id: uid("m"), role: "user", parts: [
    { type: "file", mediaType: "image/png", filename: "red.png", url: `data:image/png;base64,${RED_PNG}` },
    { type: "text", text: "what is in this picture?" },
  ] };
  const { message, errors } = await send(uid("chat-file"), [question]);
  assert.deepEqual(errors, []);
  const done = message.parts.find((p) => p.type === "data-pagechat-complete").data;
  const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  assert.match(text, /red\.png/); // the offline model names what it was sent and cannot open
  const stored = await storedMessages(done.conversation_id);
  assert.deepEqual(stored[0].attachments.map((a) => [a.name, a.content_type]), [["red.png", "image/png"]]);
});

test("a server tool that changes the shared state: a transient data-pagechat-state chunk (state and its JSON Patch)", async () => {
  // remember_color is the live server's test tool (tests/interop/provider.py); no state came in, so it starts empty
  const { message, chunks, errors } = await send(uid("chat-state"), [userMessage("remember color blue")]);
  assert.deepEqual(errors, []);
  const parts = chunks.filter((c) => c.type === "data-pagechat-state");
  assert.equal(parts.length, 1, chunks.map((c) => c.type).join(","));
  assert.equal(parts[0].transient, true);
  assert.deepEqual(parts[0].data.state, { color: "blue", prefs: { color: "blue", history: ["blue"] } });
  assert.ok(Array.isArray(parts[0].data.delta) && parts[0].data.delta.every((op) => ["add", "replace"].includes(op.op)));
  assert.ok(!message.parts.some((p) => p.type === "data-pagechat-state"), "transient: not kept in the message");
  assert.equal(message.parts.find((p) => p.type === "dynamic-tool").toolName, "remember_color");
  assert.equal(chunks.at(-1).type, "finish");
});
