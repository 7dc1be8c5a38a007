/**
 * The tray's keys on the whole page: Escape closes the floating panel, then the edit, then the tray (only when the
 * focus is in the tray or nowhere in particular, so a page's own dialogs keep their Escape); Ctrl+/ and a link to
 * #chat-tray open the tray with the focus in its message box.
 */

// The keyboard shortcut that opens and focuses the tray: Ctrl+/ (Control+/ on a Mac too; no browser or system uses it).
// Matched by the character, so a layout where "/" needs Shift (German: Shift+7) works the same.
export const SHORTCUT = Object.freeze({ aria: "Control+/", shown: "Ctrl+/" });

function isShortcut(e) {
  return e.key === "/" && e.ctrlKey && !e.altKey && !e.metaKey && !e.isComposing;
}

/** Listen on the document for the tray's keys and its skip link. */
export function documentKeysInstall(view, root, actions) {
  // Escape closes the panel, then the tray - when focus is in the tray or nowhere in
  // particular, so a page's own dialogs keep their Escape.
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    const focus = document.activeElement;
    if (focus && focus !== document.body && !root.contains(focus)) return;
    if (focus?.type === "search" && focus.value) return; // its own Escape empties it first
    if (view.panel.isOpen) view.panel.close();
    else if (view.editBar && !view.editBar.hidden) actions.cancelEdit();
    else if (view.isOpen) actions.close();
    else return;
    e.preventDefault();
  });
  // The shortcut (docs/tray.md) opens the tray and puts the focus in its message box, from anywhere on the page;
  // so does a link to #chat-tray (a page's "Skip to chat" link).
  document.addEventListener("keydown", (e) => {
    if (!isShortcut(e)) return;
    e.preventDefault();
    view.focusTray();
  });
  document.addEventListener("click", (e) => {
    const link = e.target instanceof Element ? e.target.closest(`a[href="#${root.id || "chat-tray"}"]`) : null;
    if (!link || e.defaultPrevented) return;
    e.preventDefault();
    view.focusTray();
  });
}
