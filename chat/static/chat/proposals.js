/**
 * One accept path: how a proposal (an answer's custom payload) and the answer's suggested actions are linked. A server
 * action that carries the proposal's own data ("Update config", "Accept & Create stream") accepts it, as the card's
 * Accept does; the built-in `cancel` rejects it. Once the proposal is decided either way, those buttons are disabled,
 * and a card whose page gives it no Accept of its own gets that server action as its primary button. No DOM.
 */

/** The keys of an object that hold a value (null and undefined say nothing: a schema's unset optional field). */
function said(obj) {
  return Object.keys(obj).filter((k) => obj[k] !== undefined && obj[k] !== null);
}

/**
 * Equal JSON values: objects by the keys that hold a value (in any order), arrays item by item; null and undefined
 * are equal (the server fills a payload's unset optional fields with null, a model's action data leaves them out).
 */
export function sameData(a, b) {
  if (a === b || (a == null && b == null)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((item, i) => sameData(item, b[i]));
  const keys = said(a);
  return keys.length === said(b).length && keys.every((k) => Object.hasOwn(b, k) && sameData(a[k], b[k]));
}

/**
 * True when a server action applies this proposal: its data is the proposal's data, or a part of it (every key it has,
 * with the same value: a model may leave out what the card adds, such as its reasoning).
 */
export function acceptsProposal(action, payload) {
  if (!action || action.handler !== "server" || !payload) return false;
  const data = action.data;
  const proposed = payload.data;
  if (sameData(data, proposed)) return true;
  if (!data || typeof data !== "object" || Array.isArray(data) || !proposed || typeof proposed !== "object" || Array.isArray(proposed)) return false;
  const keys = said(data);
  return keys.length > 0 && keys.every((k) => Object.hasOwn(proposed, k) && sameData(data[k], proposed[k]));
}

/** True when the action discards the proposal (the built-in client action `cancel`). */
export function rejectsProposal(action) {
  return Boolean(action) && action.handler === "client" && action.action === "cancel";
}

/** True when the action would do what the proposal's Accept or Reject does: once it is decided, it is disabled. */
export function decidesProposal(action, payload) {
  return Boolean(payload) && (acceptsProposal(action, payload) || rejectsProposal(action));
}

/** The first suggested action of the message that accepts its proposal, or null. */
export function acceptingAction(message) {
  const payload = message?.custom_payload;
  const actions = Array.isArray(message?.suggested_actions) ? message.suggested_actions : [];
  return (payload && actions.find((a) => a && typeof a.action === "string" && acceptsProposal(a, payload))) || null;
}
