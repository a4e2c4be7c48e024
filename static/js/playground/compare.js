// Side by side: up to six columns, each the editor's draft or a saved version,
// on a model of its own, run at once on the same variables. Each column
// streams into its own text node (no re-render per token) and shows its
// latency, tokens, speed and cost; a column can be saved as a new version.
// Before a run, the estimate (POST /api/estimate) says what it may cost and
// how long the pool needs for it now.

import { api, el, showAlert } from "./api.js";
import { describeEstimate } from "./estimate.js";
import { completionTokens, describeRunError, streamChat, tokensPerSecond } from "./stream.js";

const $ = (id) => document.getElementById(id);
const MAX_COLUMNS = 6;

export class ComparePanel {
  // host: { cfg, catalog, editorState(), versions(), versionState(id), variables(), save(state), base() }
  constructor(host) {
    this.host = host;
    this.columns = [];
    this.controllers = [];
    $("compare-add").addEventListener("click", () => this.add());
    $("compare-run").addEventListener("click", () => this.runAll());
    this.estimateTimer = 0;
  }

  async add(source = "editor") {
    if (this.columns.length >= MAX_COLUMNS) return;
    const col = { source: el("select", { "aria-label": "Source" }), model: el("select", { "aria-label": "Model" }) };
    col.source.append(new Option("Editor (draft)", "editor"));
    for (const v of await this.host.versions()) col.source.append(new Option(`v${v.number} ${v.message || ""}`.trim(), v.id));
    col.source.value = source;
    for (const card of this.host.catalog) col.model.append(new Option(card.id, card.id));
    col.model.value = this.host.editorState().model;
    col.text = document.createTextNode("");
    col.out = el("pre", { class: "output compact", tabindex: "0", "aria-label": "Column output" }, col.text);
    col.stats = el("div", { class: "stats col-stats" });
    col.error = el("div", { class: "alert err", role: "alert", hidden: true });
    col.saveBtn = el("button", { type: "button", class: "btn small", text: "Save as version", hidden: !this.host.cfg.apiBase,
                                 onclick: () => this.promote(col) });
    col.node = el("div", { class: "compare-col" },
      el("div", { class: "col-head" }, col.source, col.model,
        el("button", { type: "button", class: "btn small icon", text: "✕", title: "Remove column",
                       "aria-label": "Remove column", onclick: () => this.remove(col) })),
      col.out, col.stats, col.error, col.saveBtn);
    // A saved version on its own model is that version already: nothing to save.
    const showSave = async () => {
      const own = col.source.value !== "editor" && (await this.host.versionState(col.source.value)).model;
      col.saveBtn.hidden = !this.host.cfg.apiBase || own === col.model.value;
    };
    col.source.addEventListener("input", async () => {
      if (col.source.value !== "editor") col.model.value = (await this.host.versionState(col.source.value)).model;
      showSave();
      this.scheduleEstimate();
    });
    col.model.addEventListener("input", () => { showSave(); this.scheduleEstimate(); });
    this.columns.push(col);
    $("compare-cols").append(col.node);
    this.layout();
    this.scheduleEstimate();
  }

  remove(col) {
    this.columns = this.columns.filter((c) => c !== col);
    col.node.remove();
    this.layout();
    this.scheduleEstimate();
  }

  layout() {
    $("compare-cols").style.setProperty("--cols", String(Math.max(1, this.columns.length)));
    $("compare-add").disabled = this.columns.length >= MAX_COLUMNS;
    $("compare-run").disabled = !this.columns.length;
    $("compare-empty").hidden = this.columns.length > 0;
  }

  async stateOf(col) {
    const s = col.source.value === "editor" ? this.host.editorState() : await this.host.versionState(col.source.value);
    return { ...s, model: col.model.value };
  }

  scheduleEstimate() {
    clearTimeout(this.estimateTimer);
    this.estimateTimer = setTimeout(() => this.estimate(), 300);
  }

  async estimate() {
    if (!this.columns.length) { $("compare-estimate").textContent = ""; return; }
    try {
      const items = [];
      for (const col of this.columns) {
        const s = await this.stateOf(col);
        const messages = [...(s.system.trim() ? [{ role: "system", content: s.system }] : []),
                          ...s.messages.map((m) => ({ ...m, content: m.content || "" })),
                          { role: "user", content: s.body || " " }];
        items.push({ model: s.model, messages, max_tokens: s.max_tokens, count: 1 });
      }
      const e = await api("/api/estimate", { method: "POST", body: { items } });
      $("compare-estimate").textContent = describeEstimate(e);
    } catch (err) {
      $("compare-estimate").textContent = `No estimate: ${err.message}`;
    }
  }

  async runAll() {
    if (this.controllers.length) { this.controllers.forEach((c) => c.abort()); return; }
    const variables = this.host.variables();
    if (variables === null) return; // the host said which are missing
    $("compare-run").firstChild.textContent = "Stop all ";
    const runs = this.columns.map(async (col) => {
      const controller = new AbortController();
      this.controllers.push(controller);
      try {
        await this.runColumn(col, await this.stateOf(col), variables, controller.signal);
      } catch (err) {
        showAlert(col.error, err.message);
      } finally {
        this.controllers = this.controllers.filter((c) => c !== controller);
      }
    });
    await Promise.allSettled(runs);
    $("compare-run").firstChild.textContent = "Run all ";
    this.host.ran();
  }

  async runColumn(col, s, variables, signal) {
    col.text.data = "";
    col.out.classList.add("streaming");
    showAlert(col.error, "");
    col.stats.textContent = "…";
    const request = { version: col.source.value === "editor" ? this.host.base() : col.source.value,
                      system: s.system, messages: s.messages, body: s.body, variables,
                      ...pick(s, ["model", "temperature", "top_p", "max_tokens", "seed"]),
                      ...(s.stop && s.stop.length ? { stop: s.stop } : {}), ...s.format };
    const started = performance.now();
    try {
      const stats = await streamChat({ request, signal, url: this.host.cfg.runUrl,
        onToken: (t) => { col.text.appendData(t); } });
      const card = this.host.catalog.find((c) => c.id === s.model);
      const usage = stats.usage || {};
      const cost = card && card.price && usage.prompt_tokens !== undefined
        ? (usage.prompt_tokens * card.price.input + usage.completion_tokens * card.price.output) / 1e6 : null;
      const tps = tokensPerSecond(stats);
      col.stats.replaceChildren(...[
        ["latency", `${Math.round(performance.now() - started)} ms`],
        ["TTFT", stats.ttftMs === null ? "–" : `${Math.round(stats.ttftMs)} ms`],
        ["tokens", `${usage.prompt_tokens ?? "?"} → ${completionTokens(stats)}`],
        ["speed", tps ? `${tps.toFixed(1)} tok/s` : "–"],
        ["cost", cost === null ? "not priced" : `$${cost.toFixed(6)}`],
      ].map(([k, v]) => el("span", {}, `${k} `, el("b", { text: v }))));
    } catch (err) {
      col.stats.textContent = "";
      showAlert(col.error, err.name === "AbortError" ? "Stopped." : describeRunError(err));
    } finally {
      col.out.classList.remove("streaming");
    }
  }

  async promote(col) {
    try {
      const made = await this.host.save(await this.stateOf(col));
      col.saveBtn.textContent = `Saved as v${made.number}`;
    } catch (err) {
      showAlert(col.error, `Not saved: ${err.message}`);
    }
  }
}

function pick(s, keys) {
  return Object.fromEntries(keys.filter((k) => s[k] !== null && s[k] !== undefined).map((k) => [k, s[k]]));
}
