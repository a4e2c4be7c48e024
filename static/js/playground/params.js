// Model and sampling controls, drawn from the server's model cards
// (cfg.catalog: inference_protocol.cards): each model's parameters with their
// bounds and defaults, its features (tools, response_format) and its price.
// Nothing here hard-codes a bound or a default.

import { el } from "./api.js";

const $ = (id) => document.getElementById(id);
const domId = (name) => name.replace(/_/g, "-");

export class Params {
  constructor(cfg, onChange) {
    this.cards = new Map(cfg.catalog.map((c) => [c.id, c]));
    this.onChange = onChange;
    this.select = $("model-select");
    this.select.replaceChildren(...cfg.catalog.map((c) => new Option(c.id, c.id)));
    this.ensureModel(cfg.defaultModel);
    this.select.addEventListener("input", () => { this.draw(this.get()); onChange(); });
    this.draw({});
  }

  card() { return this.cards.get(this.select.value) || { parameters: [], features: [], price: null }; }

  supports(feature) { return this.card().features.includes(feature); }

  ensureModel(name) {
    if (!name) return;
    if (![...this.select.options].some((o) => o.value === name)) {
      this.select.add(new Option(`${name} (not served now)`, name));
    }
    this.select.value = name;
  }

  // One control per parameter of the model's card, holding `values` (or the defaults).
  draw(values) {
    const rows = this.card().parameters.map((p) => this.control(p, values[p.name]));
    $("param-controls").replaceChildren(...rows);
    const price = this.card().price;
    $("model-price").textContent = price
      ? `$${price.input} / $${price.output} per million input / output tokens` : "Not priced";
    document.dispatchEvent(new CustomEvent("playground:model", { detail: this.card() }));
  }

  control(p, value) {
    const id = domId(p.name);
    const label = el("label", { for: id, text: p.name.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase()) });
    const given = value === undefined ? p.default : value;
    if (p.type === "number") {
      const input = el("input", { type: "range", id, min: p.min, max: p.max, step: p.step });
      const out = el("output", { for: id, id: `${id}-out` });
      input.value = given ?? p.default;
      out.textContent = input.value;
      input.addEventListener("input", () => { out.textContent = input.value; this.onChange(); });
      return el("div", { class: "full" }, label, el("div", { class: "range-row" }, input, out));
    }
    if (p.type === "strings") {
      const input = el("input", { id, placeholder: "\\n\\n", "data-max-items": p.max_items });
      input.value = (given || []).map((x) => x.replace(/\n/g, "\\n")).join(",");
      input.addEventListener("input", this.onChange);
      label.textContent = "Stop";
      input.title = `Up to ${p.max_items} sequences, comma separated; \\n is a newline`;
      return el("div", {}, label, input);
    }
    const input = el("input", { type: "number", id, min: p.min, max: p.max, step: 1,
                                placeholder: p.default === null ? "none" : String(p.default) });
    input.value = given ?? "";
    input.addEventListener("input", this.onChange);
    return el("div", {}, label, input);
  }

  get() {
    const out = { model: this.select.value };
    for (const p of this.card().parameters) {
      const input = $(domId(p.name));
      if (!input) continue;
      if (p.type === "strings") {
        out[p.name] = input.value.split(",").map((s) => s.replace(/\\n/g, "\n")).filter((s) => s.length);
      } else {
        out[p.name] = input.value === "" ? null : Number(input.value);
      }
    }
    return out;
  }

  set(s) {
    if (s.model) this.ensureModel(s.model);
    this.draw(s);
  }
}
