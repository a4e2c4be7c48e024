// A textarea with {{variables}} highlighted by a mirror <pre> drawn behind it.
// The mirror is rebuilt from text nodes and <mark>s (never innerHTML), and is
// switched off for very large texts, which stay a plain, fast textarea.

export const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const HIGHLIGHT_MAX_CHARS = 200_000;

export function variablesIn(...texts) {
  const seen = new Set();
  for (const t of texts) for (const m of t.matchAll(VARIABLE)) seen.add(m[1]);
  return [...seen];
}

// "{{" that does not open a variable ({{ 1x }}, {{name}, {{a b}}): the server
// sends it as plain text, which is rarely what was meant.
const OPENING = /\{\{/g;
const STARTS_VARIABLE = /^\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}/;

export function malformedIn(...texts) {
  const found = [];
  for (const t of texts) {
    for (const m of t.matchAll(OPENING)) {
      const rest = t.slice(m.index, m.index + 40);
      if (!STARTS_VARIABLE.test(rest) && !(m.index > 0 && t[m.index - 1] === "{")) {
        const close = rest.indexOf("}}");
        found.push((close > 0 ? rest.slice(0, close + 2) : rest).split("\n")[0]);
      }
    }
  }
  return found;
}

export function render(text, values) {
  return text.replace(VARIABLE, (_, name) => values[name] ?? "");
}

export class HighlightedEditor {
  constructor(textarea, onInput) {
    this.textarea = textarea;
    this.wrap = textarea.parentElement;
    this.mirror = this.wrap.querySelector("pre");
    this.known = new Set();
    this.frame = 0;
    this.top = 0; // the textarea's scroll offset, kept from its scroll events
    textarea.addEventListener("input", () => { this.schedule(); onInput(); });
    textarea.addEventListener("scroll", () => { this.top = textarea.scrollTop; this.mirror.scrollTop = this.top; });
    // The mirror takes the textarea's height from the observer (after layout; also when the user
    // drags the resize handle): a repaint never reads layout, which would force one per keystroke.
    new ResizeObserver(([entry]) => {
      this.mirror.style.height = `${entry.borderBoxSize[0].blockSize}px`;
      this.mirror.scrollTop = this.top;
    }).observe(textarea);
  }

  get value() { return this.textarea.value; }

  set value(text) {
    if (text !== this.textarea.value) this.textarea.value = text;
    this.schedule();
  }

  setReadOnly(ro) { this.textarea.readOnly = ro; }

  // One repaint per animation frame, however fast the user types.
  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.paint(); });
  }

  paint() {
    const text = this.textarea.value;
    const plain = text.length > HIGHLIGHT_MAX_CHARS;
    this.wrap.classList.toggle("plain", plain);
    if (plain) { this.mirror.replaceChildren(); return; }
    const parts = [];
    let last = 0;
    for (const m of text.matchAll(VARIABLE)) {
      parts.push(document.createTextNode(text.slice(last, m.index)));
      const mark = document.createElement("mark");
      mark.textContent = m[0];
      parts.push(mark);
      last = m.index + m[0].length;
    }
    // A trailing newline needs a character after it to take up a line.
    parts.push(document.createTextNode(text.slice(last) + "\n"));
    this.mirror.replaceChildren(...parts);
    if (this.top) this.mirror.scrollTop = this.top;
  }
}
