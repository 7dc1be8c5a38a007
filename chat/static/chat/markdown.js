/**
 * A deliberately tiny, safe text renderer for model text that has not been sanitized by the
 * server yet (the live stream, or a message without message_html). It only ever creates
 * DOM nodes and text nodes: paragraphs, ``` fenced code, `inline code`, **bold**, and
 * [[tool:N]] markers, which become whatever `toolSlot(index)` returns.
 */
import { h } from "./dom.js";

const MARKER = /\[\[tool:(\d+)\]\]/g;
// A marker cut in half at the end of the live stream ("[[to"), held back until it completes.
const PARTIAL_MARKER = /\[(?:\[(?:t(?:o(?:o(?:l(?::\d*)?)?)?)?)?)?$/;

/** Drop a half-received trailing marker so it never flashes as raw text. */
export function withoutPartialMarker(text) {
  return text.replace(PARTIAL_MARKER, "");
}

/** Render model text into a fragment of safe DOM nodes. */
export function renderText(text, toolSlot) {
  const fragment = document.createDocumentFragment();
  const parts = String(text || "").split("```");
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      // Odd parts are inside a fence; the first line may name the language, which we drop.
      const body = part.replace(/^[\w+-]*\n/, "");
      fragment.append(h("pre", { class: "chat-code" }, h("code", {}, body)));
      return;
    }
    for (const block of part.split(/\n{2,}/)) {
      if (!block.trim()) continue;
      renderBlock(fragment, block.replace(/^\n+|\n+$/g, ""), toolSlot);
    }
  });
  return fragment;
}

/** One paragraph; a marker alone on its line becomes a block-level tool slot. */
function renderBlock(parent, block, toolSlot) {
  let paragraph = null;
  let last = 0;
  const flush = (until) => {
    const chunk = block.slice(last, until).replace(/^\n+|\n+$/g, "");
    if (!chunk.trim()) return;
    paragraph ??= parent.appendChild(h("p"));
    renderInline(paragraph, chunk);
  };
  for (const match of block.matchAll(MARKER)) {
    flush(match.index);
    paragraph = null;
    parent.append(toolSlot(Number(match[1])));
    last = match.index + match[0].length;
  }
  flush(block.length);
}

const INLINE = /(`[^`\n]+`|\*\*[^*\n]+\*\*)/g;

function renderInline(parent, text) {
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    parent.append(text.slice(last, match.index));
    const token = match[0];
    if (token.startsWith("`")) parent.append(h("code", {}, token.slice(1, -1)));
    else parent.append(h("strong", {}, token.slice(2, -2)));
    last = match.index + token.length;
  }
  parent.append(text.slice(last));
}
