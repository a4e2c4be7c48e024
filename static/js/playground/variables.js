// The variables panel: one input per {{name}} in the texts, in first-use
// order. Values typed for a name survive while it is edited away and back.
// Below the inputs, warnings: a "{{" that opens no variable, and a declared
// variable (a saved default) that no text uses.

import { el } from "./api.js";

export class VariablesPanel {
  constructor(root, onChange) {
    this.root = root;
    this.onChange = onChange;
    this.current = [];
    this.memory = {}; // name -> value, including names no longer in the text
    this.inputs = el("div");
    this.warnings = el("ul", { class: "var-warnings", id: "var-warnings", "aria-live": "polite" });
    root.replaceChildren(this.inputs, this.warnings);
  }

  names() { return this.current; }

  values() {
    return Object.fromEntries(this.current.map((n) => [n, this.memory[n] ?? ""]));
  }

  sync(names, defaults = null) {
    if (defaults) for (const [k, v] of Object.entries(defaults)) this.memory[k] = v ?? "";
    if (!defaults && names.join("\n") === this.current.join("\n")) return;
    this.current = names;
    if (!names.length) {
      this.inputs.replaceChildren(el("p", { class: "hint", id: "vars-empty" },
        "No variables yet. Type {{name}} in the prompt."));
      return;
    }
    this.inputs.replaceChildren(...names.map((name) => {
      const id = `var-${name}`;
      const input = el("textarea", { id, rows: 1, "data-var": name, placeholder: `value of ${name}` });
      input.value = this.memory[name] ?? "";
      input.addEventListener("input", () => { this.memory[name] = input.value; this.onChange(); });
      return el("div", { class: "var-row" }, el("label", { for: id, text: name }), input);
    }));
  }

  // malformed: snippets that open no variable; unused: declared names no text uses.
  warn({ malformed = [], unused = [] }) {
    const items = [
      ...malformed.slice(0, 5).map((s) => el("li", { class: "warn", "data-kind": "malformed" },
        "Not a variable, sent as written: ", el("code", { text: s }),
        " (a name is letters, digits and _, not starting with a digit: {{name}})")),
      ...unused.map((n) => el("li", { class: "warn", "data-kind": "unused" },
        el("code", { text: n }), " has a saved default but no text uses it.")),
    ];
    this.warnings.replaceChildren(...items);
  }
}
