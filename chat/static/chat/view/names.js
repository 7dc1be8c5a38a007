/** The tray's names that are a contract. */
import { gettext_noop } from "../i18n.js";

// The launcher's, the message box's and the send button's accessible names: these English words are the contract of
// an English page; in another language they are translated like every other name. Tests and programs that must find
// them in any language use their stable attributes (data-pagechat-launcher, data-pagechat-input, data-pagechat-send).
export const CONTRACT_NAMES = Object.freeze({ launcher: gettext_noop("Open chat"), input: gettext_noop("Message"), send: gettext_noop("Send") });
