/**
 * The tray's words in the page's language. chat/tray.html loads Django's JavaScript catalog (the `djangojs` domain,
 * for the language the page was rendered in) before the tray's module; it defines window.django. Without it every
 * string stays English. Strings are marked with these functions, so `manage.py makemessages -d djangojs` finds them:
 *
 *   gettext("Send")
 *   ngettext("%(count)s conversation", "%(count)s conversations", n)
 *   interpolate(gettext("Hi %(user)s! How can I help?"), { user })
 *
 * Dates and numbers use the page's language through Intl (formatDate, formatNumber).
 */

function catalog() {
  const django = globalThis.django;
  return django && typeof django.gettext === "function" ? django : null;
}

/** The translation of `msgid`, or `msgid` itself. */
export function gettext(msgid) {
  const django = catalog();
  return django ? django.gettext(msgid) : msgid;
}

/** The singular or plural translation for `count` (the language's own plural rule). */
export function ngettext(singular, plural, count) {
  const django = catalog();
  if (django && typeof django.ngettext === "function") return django.ngettext(singular, plural, count);
  return count === 1 ? singular : plural;
}

/** `fmt` with every `%(name)s` replaced by `values[name]` (named only: translations may reorder them). */
export function interpolate(fmt, values) {
  return String(fmt).replace(/%\((\w+)\)s/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/** The page's language: the tray config's (the language the page was rendered in), else <html lang>, else English. */
export function pageLanguage(config = null) {
  const fromConfig = config && typeof config.language === "string" ? config.language : "";
  const fromPage = typeof document !== "undefined" ? document.documentElement.lang : "";
  return fromConfig || fromPage || "en";
}

let language = "en";

/** Set the language dates and numbers are formatted in (the tray does it once, from its config). */
export function setLanguage(lang) {
  language = lang || "en";
}

export function currentLanguage() {
  return language;
}

function safeLocale() {
  try {
    return Intl.getCanonicalLocales(language)[0];
  } catch {
    return "en";
  }
}

/** A date and time in the page's language ("23.11.2026, 17:40" in German). */
export function formatDate(date) {
  return new Intl.DateTimeFormat(safeLocale(), { dateStyle: "medium", timeStyle: "short" }).format(date);
}

/** A month and year in the page's language ("Oktober 2026" in German). */
export function formatMonth(date) {
  return new Intl.DateTimeFormat(safeLocale(), { month: "long", year: "numeric" }).format(date);
}

/** A number in the page's language ("1.234" in German). */
export function formatNumber(value) {
  return new Intl.NumberFormat(safeLocale()).format(value);
}

/** Marks a string for the catalog without translating it yet (translated where it is shown, with gettext). */
export function gettext_noop(msgid) {
  return msgid;
}

/**
 * Like interpolate, but the values are DOM nodes (or text): an array of strings and nodes to append, so a
 * translation can put the node wherever its language needs it ("Allow %(tool)s?" -> "%(tool)s erlauben?").
 */
export function interpolateNodes(fmt, nodes) {
  const out = [];
  let last = 0;
  for (const m of String(fmt).matchAll(/%\((\w+)\)s/g)) {
    if (!(m[1] in nodes)) continue;
    if (m.index > last) out.push(fmt.slice(last, m.index));
    out.push(nodes[m[1]]);
    last = m.index + m[0].length;
  }
  if (last < fmt.length) out.push(fmt.slice(last));
  return out;
}

/** A title inside a sentence ("View stream ideas"): lower case, except in German, which capitalises its nouns. */
export function titleInSentence(title) {
  return /^de\b/i.test(language) ? String(title) : String(title).toLowerCase();
}

/** The accepted/rejected tag of a proposal. */
export function outcomeLabel(outcome) {
  if (outcome === "accepted") return gettext("accepted");
  if (outcome === "rejected") return gettext("rejected");
  return String(outcome);
}

/** A status the server wrote ("Thinking…"): translated when the catalog knows it, as it is otherwise. */
export function serverText(message) {
  return message ? gettext(String(message)) : "";
}
gettext_noop("Thinking…"); // the server's first status of every run

// What each error code means to a person: shown instead of the server's English message on a page in another
// language (the server's message is more precise, so an English page keeps it).
const ERROR_TEXT = {
  busy: gettext_noop("A reply is already being written in this conversation."),
  rate_limited: gettext_noop("Too many requests; wait a moment and try again."),
  budget_exceeded: gettext_noop("You have used today's budget for the assistant; it resets at midnight UTC."),
  forbidden: gettext_noop("You do not have permission to do this here."),
  action_rejected: gettext_noop("This action cannot be run."),
  not_found: gettext_noop("That conversation no longer exists."),
  too_large: gettext_noop("The message is too long."),
  resync: gettext_noop("These events are no longer available; reload the conversation."),
  interrupted: gettext_noop("The answer was interrupted; what was written so far is kept."),
  internal: gettext_noop("Something went wrong while answering. Please try again."),
  provider_error: gettext_noop("The model call failed."),
  provider_unavailable: gettext_noop("The model server is unavailable."),
  overloaded: gettext_noop("The model is overloaded; try again in a moment."),
  timeout: gettext_noop("The model did not answer in time."),
  bad_request: gettext_noop("The model server rejected the request."),
  auth_error: gettext_noop("The model server refused the credentials."),
};

/** The text to show for an error frame ({code, message}) in the page's language; "" when there is nothing to say. */
export function errorText(error) {
  const known = error && Object.hasOwn(ERROR_TEXT, error.code) ? ERROR_TEXT[error.code] : null;
  if (known && !/^en\b/i.test(language)) return gettext(known);
  return error?.message ? String(error.message) : "";
}
