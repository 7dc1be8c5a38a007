// What the standard-client tests share: the live server's address and tokens (set by
// tests/interop/test_standard_clients.py) and a REST helper to read what the server stored.
import assert from "node:assert/strict";

export const BASE = process.env.PAGECHAT_URL;
export const TOKEN = process.env.PAGECHAT_TOKEN;
export const OTHER_TOKEN = process.env.PAGECHAT_OTHER_TOKEN;
assert.ok(BASE && TOKEN && OTHER_TOKEN, "run through tests/interop/test_standard_clients.py (it starts the server)");

export const auth = (token = TOKEN) => ({ Authorization: `Token ${token}` });

/** GET a JSON resource of the API as the given user. */
export async function getJson(path, token = TOKEN) {
  const response = await fetch(`${BASE}${path}`, { headers: auth(token) });
  assert.equal(response.status, 200, `${path}: ${response.status}`);
  return response.json();
}

/** The stored messages of a conversation, as the REST API gives them. */
export async function storedMessages(conversationId, token = TOKEN) {
  return (await getJson(`/api/conversations/${conversationId}/`, token)).messages;
}

export const uid = (prefix) => `${prefix}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

/** A 4 x 4 red PNG, base64: a picture a client sends inside its message. */
export const RED_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAFElEQVR4nGM8ISfHAANMDEgANwcANHYBDK9qubUAAAAASUVORK5CYII=";
