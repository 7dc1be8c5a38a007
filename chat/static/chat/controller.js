/**
 * The tray controller: what the user and the page can ask of the tray (open, send, stop,
 * retry, switch conversation, ...) and how the tray answers the protocol client's callbacks.
 * It composes the features in controller/ (features.js lists them: the window, the composer, attachments, editing
 * the last question, answers, the turn in flight, conversations, cards and proposals), each a module of methods
 * with the state it keeps. Conversation state is in the store (store.js), the wire in the protocol client
 * (protocol.js), REST in api.js, and the DOM in the views (view.js, messages.js, live.js, panel.js, history.js):
 * the features reach the DOM only through the view and `render` below, so they run under Node in the unit tests.
 *
 * Pages get this object from getTray()/onTrayReady(); its public methods are open(), close(),
 * toggle(), send(message, interactionType, actionMetadata), newConversation(), reset(),
 * notice(text, kind), openPayload(customPayload), loadConversation(id).
 */
import { composeFeatures, featureState } from "./controller/features.js";
import { LiveTurn } from "./live.js";
import { HistoryView } from "./history.js";
import { renderAssistantMessage, renderUserMessage } from "./messages.js";
import { TrayView } from "./view.js";
import { pageLanguage, setLanguage } from "./i18n.js";

export class Tray {
  /**
   * @param {HTMLElement} root
   * @param {object} config  the tray config rendered by the template tag
   * @param {{store, api, createProtocol(hooks, seen)}} parts
   */
  constructor(root, config, { store, api, createProtocol }) {
    this.root = root;
    this.config = config;
    this.store = store;
    this.api = api;
    Object.assign(this, featureState());
    this.protocol = createProtocol(this.protocolHooks(), store.seenSeq);
    // the elements the features add to the conversation
    this.render = {
      userMessage: renderUserMessage,
      assistantMessage: renderAssistantMessage,
      liveTurn: (hooks) => new LiveTurn(hooks),
    };
    setLanguage(pageLanguage(config)); // dates and numbers in the page's language
    this.view = new TrayView(root, config, {
      toggle: () => this.toggle(),
      close: () => this.close(),
      submit: (text) => this.send(text, "text_input"),
      startWith: (text) => this.send(text, "text_input"), // a welcome starter: sent as if typed
      stop: () => this.cancel(),
      newChat: () => this.newConversation(),
      toggleHistory: () => this.toggleConversations(),
      cancelEdit: () => this.cancelEdit(),
      editLastQuestion: () => this.editLastQuestion(),
      attach: (files) => this.attach(files),
      draftChanged: () => this.saveDraft(),
      loadEarlier: () => this.loadEarlier(),
    });
    // The browser's own view of the network: warn at once instead of "Thinking…" for 30 s.
    window.addEventListener("offline", () => this.onNetwork(false));
    window.addEventListener("online", () => this.onNetwork(true));
    if (navigator.onLine === false) this.onNetwork(false);
    // a frontend tool still running when the page goes away ends with an error the model reads (controller/tools.js)
    window.addEventListener("pagehide", () => this.leavePage());
    this.history = new HistoryView(this);
    this.view.mountHistory(this.history.el);
    this.panel = this.view.panel;
  }

  /** Pick up the tab's conversation (and a run still streaming) after a page navigation. */
  start() {
    const { open, draft } = this.store.restore();
    // what was typed or uploaded and not sent comes back after a navigation or a reload of the tab, to its writer only
    this.restoreDraft(draft);
    if (open) this.open({ focus: false }); // reopen after navigation without stealing focus
  }

  // ---- what views and pages read ------------------------------------------------------------------

  get conversationId() {
    return this.store.conversationId;
  }

  get payloadOutcomes() {
    return this.store.payloadOutcomes;
  }

  get isOpen() {
    return this.view.isOpen;
  }
}

composeFeatures(Tray.prototype);
