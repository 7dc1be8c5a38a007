/**
 * The controller's features, composed into the tray (controller.js): each is a module of methods that run with
 * `this` as the tray, and the state it keeps on it. DOM-free, so the unit tests compose the same set (tests/js/).
 */
import { shell } from "./shell.js";
import { composer } from "./composer.js";
import { attachments, attachmentsState } from "./attachments.js";
import { editing, editingState } from "./editing.js";
import { answers, answersState } from "./answers.js";
import { turns, turnsState } from "./turns.js";
import { conversations, conversationsState } from "./conversations.js";
import { cards } from "./cards.js";
import { tools, toolsState } from "./tools.js";

/** Every feature's methods; no two features define the same name (checked by tests/js/controller_features.test.mjs). */
export const FEATURES = Object.freeze({ shell, composer, attachments, editing, answers, turns, conversations, cards, tools });

/** The state the features keep on the tray, as a new tray starts with it. */
export function featureState() {
  return { ...turnsState(), ...conversationsState(), ...attachmentsState(), ...editingState(), ...answersState(), ...toolsState() };
}

/** Give `target` (the tray's prototype, or a test's tray) every feature's methods. */
export function composeFeatures(target) {
  for (const methods of Object.values(FEATURES)) Object.assign(target, methods);
  return target;
}
