// Model and sampling controls. Models come from GET /v1/models when it
// answers; otherwise the server's configured list (and the version's model).

import { api } from "./api.js";

const $ = (id) => document.getElementById(id);

export class Params {
  constructor(cfg, onChange) {
    this.select = $("model-select");
    this.setModels(cfg.models, cfg.defaultModel);
    for (const [input, output] of [["temperature", "temperature-out"], ["top-p", "top-p-out"]]) {
      $(input).addEventListener("input", () => { $(output).textContent = $(input).value; onChange(); });
    }
    for (const id of ["model-select", "max-tokens", "stop"]) $(id).addEventListener("input", onChange);
  }

  setModels(names, selected) {
    const current = selected || this.select.value;
    this.select.replaceChildren(...names.map((n) => new Option(n, n)));
    this.ensureModel(current);
  }

  ensureModel(name) {
    if (!name) return;
    if (![...this.select.options].some((o) => o.value === name)) this.select.add(new Option(name, name));
    this.select.value = name;
  }

  async loadModels() {
    try {
      const list = await api("/v1/models");
      const names = list.data.map((m) => m.id);
      if (names.length) this.setModels(names, this.select.value);
    } catch {
      // /v1/models unavailable: keep the configured list, which is what the server validates against.
    }
  }

  get() {
    const num = (id) => ($(id).value === "" ? null : Number($(id).value));
    return {
      model: this.select.value, temperature: num("temperature"), top_p: num("top-p"),
      max_tokens: num("max-tokens"),
      stop: $("stop").value.split(",").map((s) => s.replace(/\\n/g, "\n")).filter((s) => s.length),
    };
  }

  set(s) {
    if (s.model) this.ensureModel(s.model);
    $("temperature").value = s.temperature ?? 1;
    $("temperature-out").textContent = $("temperature").value;
    $("top-p").value = s.top_p ?? 1;
    $("top-p-out").textContent = $("top-p").value;
    $("max-tokens").value = s.max_tokens ?? 256;
    $("stop").value = (s.stop || []).map((x) => x.replace(/\n/g, "\\n")).join(",");
  }
}
