// The variables panel: one input per {{name}} in the template, in first-use
// order. Values typed for a name survive while it is edited away and back.

import { el } from "./api.js";

export class VariablesPanel {
  constructor(root, onChange) {
    this.root = root;
    this.onChange = onChange;
    this.current = [];
    this.memory = {}; // name -> value, including names no longer in the text
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
      this.root.replaceChildren(el("p", { class: "hint", id: "vars-empty" },
        "No variables yet. Type {{name}} in the prompt."));
      return;
    }
    this.root.replaceChildren(...names.map((name) => {
      const id = `var-${name}`;
      const input = el("textarea", { id, rows: 1, "data-var": name, placeholder: `value of ${name}` });
      input.value = this.memory[name] ?? "";
      input.addEventListener("input", () => { this.memory[name] = input.value; this.onChange(); });
      return el("div", { class: "var-row" }, el("label", { for: id, text: name }), input);
    }));
  }
}
