// Loaded by {% chat_tray_head %} in <head> as a classic (blocking) script, so it runs before the first paint: the
// tray's state of this tab (store.js, STORAGE_KEY) says whether the tray will open on this page, and
// `data-chat-tray-open` on <html> then lets the page's CSS make room for it at once. A file, not an inline script:
// pages keep a CSP that allows no inline script.
try {
  if (JSON.parse(sessionStorage.getItem("chat-tray:v1") || "{}").open === true) {
    document.documentElement.setAttribute("data-chat-tray-open", "");
  }
} catch (e) {
  // no storage (private mode, a sandboxed frame): the tray makes room once its module runs
}
