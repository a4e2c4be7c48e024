// The Runs panel: the prompt's run history (GET /api/prompts/<id>/runs), newest
// first, with a search, Restore (back into the editor), Copy link (the run's
// permalink, /runs/<id>/) and Save as test case (a dataset the caller may edit).

import { api, el } from "./api.js";

const $ = (id) => document.getElementById(id);

function when(iso) {
  return new Date(iso).toLocaleString();
}

function versionText(run) {
  const v = run.version_number ? `v${run.version_number}` : "";
  return run.draft ? (v ? `draft from ${v}` : "draft") : v;
}

export class RunsPanel {
  constructor(cfg, { onRestore }) {
    this.base = cfg.runsUrl;
    this.first = cfg.runs || null; // the first page, carried in the page's HTML
    this.onRestore = onRestore;
    this.next = null;
    this.caseRun = null;
    this.datasetsLoaded = false;
    let timer = 0;
    $("runs-search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => this.load(), 250); });
    $("runs-search-form").addEventListener("submit", (e) => { e.preventDefault(); this.load(); });
    $("runs-more").addEventListener("click", () => this.load({ more: true }));
    $("run-case-form").addEventListener("submit", (e) => { e.preventDefault(); this.saveCase(); });
    $("run-case-cancel").addEventListener("click", () => { $("run-case-form").hidden = true; });
  }

  status(text) { $("runs-status").textContent = text || ""; }

  async load({ more = false } = {}) {
    const q = $("runs-search").value.trim();
    const url = more && this.next ? this.next : `${this.base}?page_size=20${q ? `&q=${encodeURIComponent(q)}` : ""}`;
    try {
      const carried = !more && !q && this.first;
      this.first = null; // once: later loads (a run, a search) ask the server
      const page = carried || await api(url);
      const rows = page.results.map((run) => this.row(run));
      if (more) $("runs-body").append(...rows); else $("runs-body").replaceChildren(...rows);
      this.next = page.next;
      $("runs-more").hidden = !page.next;
      const empty = !$("runs-body").children.length;
      $("runs-empty").hidden = !empty;
      $("runs-empty").textContent = q ? "No run matches." : "No runs yet: each run here is kept with what it sent.";
      $("runs-table").hidden = empty;
    } catch (err) {
      this.status(`Could not load the runs: ${err.message}`);
    }
  }

  row(run) {
    const link = `${location.origin}/runs/${run.id}/`;
    const actions = el("td", { class: "actions" },
      el("button", { type: "button", class: "btn small", text: "Restore", onclick: () => this.restore(run.id) }),
      " ",
      el("button", { type: "button", class: "btn small", text: "Copy link", onclick: () => this.copy(link) }),
      " ",
      el("button", { type: "button", class: "btn small", text: "Save as test case",
                     onclick: () => this.offerCase(run) }));
    return el("tr", { class: run.status === "ok" ? "" : "error", "data-run": run.id },
      el("td", {}, el("a", { href: `/runs/${run.id}/`, text: when(run.created_at), title: "Open this run" })),
      el("td", { text: versionText(run) }),
      el("td", { text: run.error_code ? `${run.status} (${run.error_code})` : run.status }),
      el("td", { text: run.latency_ms === null ? "–" : `${run.latency_ms} ms` }),
      el("td", { class: "first-line", text: run.first_line, title: run.first_line }),
      actions);
  }

  async restore(id) {
    try {
      await this.onRestore(await api(`/api/runs/${id}`));
      this.status("Restored the run into the editor.");
    } catch (err) {
      this.status(`Could not restore the run: ${err.message}`);
    }
  }

  async copy(link) {
    try {
      await navigator.clipboard.writeText(link);
      this.status(`Link copied: ${link}`);
    } catch {
      this.status(`Copy this link: ${link}`);
    }
  }

  async offerCase(run) {
    this.caseRun = run;
    $("run-case-when").textContent = `of ${when(run.created_at)}`;
    $("run-case-form").hidden = false;
    if (this.datasetsLoaded) return;
    try {
      const page = await api("/api/datasets/?page_size=200");
      $("run-case-dataset").replaceChildren(...(page.results.length
        ? page.results.map((d) => el("option", { value: d.id, text: d.name }))
        : [el("option", { value: "", text: "No datasets yet (create one under Evals)" })]));
      this.datasetsLoaded = true;
    } catch (err) {
      this.status(`Could not load the datasets: ${err.message}`);
    }
  }

  async saveCase() {
    const id = $("run-case-dataset").value;
    if (!id || !this.caseRun) return;
    try {
      const version = await api(`/api/runs/${this.caseRun.id}/test-case`, { method: "POST",
                                                                            body: { dataset_id: id } });
      this.status(`Saved as row ${version.row_count} of dataset version ${version.number}.`);
      $("run-case-form").hidden = true;
    } catch (err) {
      this.status(`Could not save: ${err.message}`);
    }
  }
}
