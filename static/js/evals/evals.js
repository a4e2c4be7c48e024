// Evaluations pages: the list (new dataset), a dataset (the rows grid, paste, import, a new
// run); a run's page is run.js. Everything goes through the REST API.
import { api, apiAll, el, errorFrom, headers, pageConfig, showAlert } from "../playground/api.js";
import { describeEstimate } from "../playground/estimate.js";
import { rowsGrid } from "./grid.js";
import { evaluatorPicker } from "./picker.js";
import { promptName, runPage } from "./run.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();

// ---- The list page -------------------------------------------------------
function homePage() {
  $("dataset-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const dataset = await api("/api/datasets/", { method: "POST", body: { name: $("dataset-name").value.trim() } });
      window.location.href = `/evals/datasets/${dataset.id}/`;
    } catch (err) {
      showAlert($("dataset-error"), err.message);
    }
  });
}

// ---- A dataset -----------------------------------------------------------
function datasetPage() {
  const base = `/api/datasets/${cfg.dataset.id}`;
  let version = null, picker = null;
  const columns = [];
  // The grid's message line: what a save or paste did, and the rows it could not take.
  function gridMessage({ pending = 0, canUndo = false, message = "", kind = "hint", errors = [] }) {
    if (!cfg.canEdit) return;
    $("grid-pending").textContent = pending ? `${pending} unsaved ${pending === 1 ? "row" : "rows"}` : "";
    $("grid-undo").disabled = !canUndo;
    $("grid-save").disabled = !pending;
    $("grid-discard").disabled = !canUndo;
    const box = $("grid-report");
    box.replaceChildren(...(message ? [el("p", { class: kind === "error" ? "error" : "ok", id: "grid-summary", text: message })] : []),
      ...(errors.length ? [el("ul", {}, ...errors.map((e) => el("li", { class: "import-error", text: e })))] : []));
  }
  const grid = rowsGrid({
    base, table: $("rows"), more: $("rows-more"), canEdit: cfg.canEdit, onStatus: gridMessage,
    onSaved: async (made, message, errors = []) => {
      await loadVersions(made.id);
      gridMessage({ message, kind: "ok", errors });
    },
  });
  if (cfg.canEdit) {
    $("grid-add-row").addEventListener("click", () => grid.addRow());
    $("grid-undo").addEventListener("click", () => grid.undo());
    $("grid-save").addEventListener("click", () => grid.save());
    $("grid-discard").addEventListener("click", () => grid.discard());
    $("grid-add-col").addEventListener("submit", (event) => {
      event.preventDefault();
      const problem = grid.addColumn($("grid-col-name").value);
      if (problem) gridMessage({ message: problem, kind: "error", canUndo: grid.changed() });
      else $("grid-col-name").value = "";
    });
    $("paste-go").addEventListener("click", async () => {
      if (await grid.paste($("paste-box").value)) $("paste-box").value = "";
    });
    // Ctrl+Z outside a cell undoes the last grid edit (inside one, the browser undoes typing).
    document.addEventListener("keydown", (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === "z" && !event.target.isContentEditable &&
          !["INPUT", "TEXTAREA"].includes(event.target.tagName)) { grid.undo(); }
    });
    window.addEventListener("beforeunload", (event) => { if (grid.changed()) event.preventDefault(); });
  }

  async function loadVersions(select = null) {
    const versions = await apiAll(`${base}/versions`);
    $("version-select").replaceChildren(...versions.map((v) =>
      el("option", { value: v.id, text: `v${v.number} · ${v.row_count} rows${v.message ? " · " + v.message : ""}` })));
    version = select || (versions[0] && versions[0].id) || null;
    if (version) $("version-select").value = version;
    const current = versions.find((v) => v.id === version);
    $("row-count").textContent = current ? `(${current.row_count})` : "(no version yet)";
    for (const kind of ["csv", "jsonl"]) {
      $(`export-${kind}`).href = version ? `${base}/versions/${version}/export?as=${kind}` : "#";
    }
    grid.load(current || null);
  }
  $("version-select").addEventListener("change", () => {
    if (grid.changed() && !window.confirm("Discard the unsaved edits in the grid?")) {
      $("version-select").value = version;
      return;
    }
    loadVersions($("version-select").value);
  });

  async function importFile(dryRun) {
    const report = $("import-report");
    const file = $("import-file").files[0];
    if (!file) { report.replaceChildren(el("p", { class: "error", text: "Choose a CSV, TSV or JSONL file first." })); return; }
    if (!dryRun && grid.changed()) { report.replaceChildren(el("p", { class: "error", text: "Save or discard your edits in the grid first." })); return; }
    const form = new FormData();
    form.append("file", file);
    form.append("mode", $("import-mode").value);
    if (version) form.append("base", version);
    form.append(dryRun ? "dry_run" : "skip_invalid", "true");
    report.replaceChildren(el("p", { class: "hint", text: dryRun ? "Checking…" : "Importing…" }));
    const res = await fetch(`${base}/import`, { method: "POST", body: form, credentials: "same-origin", headers: headers() });
    if (!res.ok) {
      const err = await errorFrom(res);
      report.replaceChildren(el("p", { class: "error", text: err.message }));
      return;
    }
    const body = await res.json();
    if (res.status === 202) { await followImport(body.import); return; }
    const summary = dryRun ? `${body.valid} rows are valid, ${body.error_count} have errors.`
      : `Imported ${body.valid} rows as version ${body.version.number}` +
        (body.error_count ? `; skipped ${body.error_count} with errors.` : ".");
    report.replaceChildren(el("p", { class: "ok", id: "import-summary", text: summary }),
      el("ul", {}, ...body.errors.map((e) => el("li", { class: "import-error", text: `Line ${e.line}: ${e.message}` }))));
    if (!dryRun) await loadVersions(body.version.id);
  }
  // A large file imports in the background: a progress bar until it is done.
  async function followImport(job) {
    const report = $("import-report");
    const bar = el("progress", { id: "import-progress", max: String(job.lines_total), value: "0" });
    const label = el("p", { class: "hint", id: "import-phase", text: "Queued…" });
    report.replaceChildren(label, bar);
    while (!["done", "failed"].includes(job.status)) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      job = await api(job.url);
      bar.value = job.lines_done;
      label.textContent = job.status === "writing" ? "Writing the new version…"
        : `Parsing: line ${job.lines_done} of ${job.lines_total}`;
    }
    if (job.status === "failed") {
      report.replaceChildren(el("p", { class: "error", text: job.error.message }),
        el("ul", {}, ...job.errors.map((e) => el("li", { class: "import-error", text: `Line ${e.line}: ${e.message}` }))));
      return;
    }
    report.replaceChildren(el("p", { class: "ok", id: "import-summary", text: `Imported ${job.valid} rows as version ` +
      `${job.version.number} in the background` + (job.error_count ? `; skipped ${job.error_count} with errors.` : ".") }));
    await loadVersions(job.version.id);
  }
  if (cfg.canEdit) {
    $("import-preview").addEventListener("click", () => importFile(true));
    $("import-go").addEventListener("click", () => importFile(false));
  }

  async function loadPrompts() {
    const prompts = await apiAll("/api/prompts/");
    $("col-prompt").replaceChildren(...prompts.map((p) => el("option", { value: p.id, text: p.title })));
    await Promise.all([loadPromptVersions(), showPin()]);
  }
  async function loadPromptVersions() {
    const prompt = $("col-prompt").value;
    const versions = prompt ? await apiAll(`/api/prompts/${prompt}/versions`) : [];
    $("col-version").replaceChildren(...versions.map((v) =>
      el("option", { value: v.id, text: `v${v.number}${v.message ? " · " + v.message : ""}` })));
  }
  $("col-prompt").addEventListener("change", loadPromptVersions);
  // The picked prompt's pin: here, elsewhere, or none.
  async function showPin() {
    const prompt = $("col-prompt").value, report = $("pin-report");
    const pin = prompt ? await api(`/api/prompts/${prompt}/eval-pin`) : { dataset: null };
    if (!pin.dataset) { report.textContent = PIN_HINT; return; }
    const title = $("col-prompt").selectedOptions[0].textContent;
    if (pin.dataset !== cfg.dataset.id) {
      report.textContent = `${title}'s saves run over the dataset ${pin.dataset_name}; pinning here replaces it.`;
      return;
    }
    const scored = pin.evaluators.length ? `scored by ${pin.evaluators.map((e) => e.key).join(", ")}` : "unscored";
    report.replaceChildren(el("span", { class: "ok", id: "pin-summary",
      text: `Pinned: each version saved on ${title} now runs over this dataset beside its parent, ${scored}. ` }),
      el("a", { href: `/prompts/${prompt}/history/`, text: "Its history page" }), " shows the scores. ",
      el("button", { type: "button", class: "btn small", id: "pin-remove", text: "Unpin", onclick: async () => {
        try { await api(`/api/prompts/${prompt}/eval-pin`, { method: "DELETE" }); await showPin(); }
        catch (err) { showAlert($("run-error"), err.message); } } }));
  }
  const PIN_HINT = $("pin-report").textContent;
  $("col-prompt").addEventListener("change", () => showPin().catch((err) => showAlert($("run-error"), err.message)));
  function renderColumns() {
    $("columns").replaceChildren(...columns.map((c, i) => el("li", {}, `${c.title} v${c.number} `,
      el("button", { type: "button", class: "btn small", text: "Remove",
        onclick: () => { columns.splice(i, 1); renderColumns(); } }))));
    estimateRun();
  }
  // Rows x columns at each version's max_tokens, and the pool's time for them now.
  async function estimateRun() {
    if (!columns.length) { $("run-estimate").textContent = ""; return; }
    try {
      const e = await api("/api/evals/estimate", { method: "POST", body: {
        dataset: cfg.dataset.id, dataset_version: version, repeats: Number($("run-repeats").value),
        columns: columns.map((c) => ({ prompt: c.prompt, version: c.version })) } });
      $("run-estimate").textContent = `Estimate: ${describeEstimate(e)}`;
    } catch (err) {
      $("run-estimate").textContent = `No estimate: ${err.message}`;
    }
  }
  $("run-repeats").addEventListener("change", estimateRun);
  $("col-add").addEventListener("click", () => {
    const p = $("col-prompt"), v = $("col-version");
    if (!v.value) return;
    columns.push({ prompt: p.value, version: v.value, title: p.selectedOptions[0].textContent,
                   number: v.selectedOptions[0].textContent.split(" ")[0].slice(1) });
    renderColumns();
  });

  async function loadEvaluators() {
    picker = evaluatorPicker({ container: $("evaluator-boxes"), note: $("evaluator-note"),
                               evaluators: await api("/api/evals/evaluators") });
  }
  $("run-start").addEventListener("click", async () => {
    try {
      const evaluators = picker.specs();
      const run = await api("/api/evals/runs", { method: "POST", body: {
        dataset: cfg.dataset.id, dataset_version: version, evaluators, repeats: Number($("run-repeats").value),
        columns: columns.map((c) => ({ prompt: c.prompt, version: c.version })) } });
      window.location.href = `/evals/runs/${run.id}/`;
    } catch (err) {
      showAlert($("run-error"), err.message);
    }
  });
  $("pin-go").addEventListener("click", async () => {
    const prompt = $("col-prompt");
    if (!prompt.value) { showAlert($("run-error"), "Pick a prompt first."); return; }
    try {
      await api(`/api/prompts/${prompt.value}/eval-pin`, { method: "PUT",
        body: { dataset: cfg.dataset.id, evaluators: picker.specs() } });
      await showPin();
    } catch (err) {
      showAlert($("run-error"), err.message);
    }
  });
  async function loadRuns() {
    const page = await api(`/api/evals/runs?dataset=${cfg.dataset.id}`);
    $("dataset-runs").replaceChildren(...(page.results.length ? page.results.map((r) => el("li", { "data-run": r.id },
      el("a", { href: `/evals/runs/${r.id}/`, text: `${r.name || "Run"} · v${r.dataset_version_number} · ` +
        r.columns.map(promptName).join(" vs ") }),
      " ", el("span", { class: "badge muted", text: r.status }), " ",
      mayDelete(r) ? el("button", { type: "button", class: "btn small danger run-delete", text: "Delete",
        "aria-label": `Delete run ${r.name || r.id}`, onclick: () => deleteRun(r) }) : null))
      : [el("li", { class: "hint", text: "No runs yet." })]));
  }
  // The run's creator or the dataset's owner deletes a finished run (a running one is cancelled first).
  const mayDelete = (r) => (r.owner === cfg.username || cfg.isOwner) && !["queued", "running"].includes(r.status);
  async function deleteRun(r) {
    if (!window.confirm("Delete this run and its results? This cannot be undone.")) return;
    try { await api(`/api/evals/runs/${r.id}`, { method: "DELETE" }); await loadRuns(); }
    catch (err) { showAlert($("page-error"), err.message); }
  }
  Promise.all([loadVersions(), loadPrompts(), loadEvaluators(), loadRuns()])
    .catch((err) => showAlert($("page-error"), err.message));
}

({ home: homePage, dataset: datasetPage, run: runPage })[cfg.page]();
