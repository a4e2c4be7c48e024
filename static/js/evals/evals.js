// Evaluations pages: the list (new dataset), a dataset (rows, import, new run),
// a run (progress, aggregates, chart, the lazy grid). Everything goes through the REST API.
import { api, apiAll, el, errorFrom, headers, pageConfig, showAlert } from "../playground/api.js";
import { describeEstimate } from "../playground/estimate.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();
const fmt = (x, digits = 2) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));

// Loads pages into a table body as a sentinel element scrolls into view.
function lazyPages({ sentinel, fetchPage, renderRow, tbody }) {
  let next = 0, loading = false, token = 0;
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) load();
  });
  async function load() {
    if (loading || next === null) return;
    loading = true;
    const mine = token;
    try {
      const page = await fetchPage(next);
      if (mine !== token) return;
      for (const row of page.rows) tbody.append(renderRow(row));
      next = page.next;
      sentinel.textContent = next === null ? (tbody.children.length ? "" : "No rows.") : "Loading more…";
    } catch (err) {
      sentinel.textContent = `Could not load rows: ${err.message}`;
      next = null;
    } finally {
      loading = false;
    }
    // Still in view (a short page): keep going.
    const rect = sentinel.getBoundingClientRect();
    if (next !== null && rect.top < window.innerHeight) load();
  }
  observer.observe(sentinel);
  return {
    reset() { token += 1; next = 0; loading = false; tbody.replaceChildren(); sentinel.textContent = "Loading…"; load(); },
  };
}

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
  let version = null;
  const columns = [];
  const rows = lazyPages({
    sentinel: $("rows-more"), tbody: document.querySelector("#rows tbody"),
    fetchPage: (start) => (version ? api(`${base}/versions/${version}/rows?start=${start}&limit=100`)
      : Promise.resolve({ rows: [], next: null })),
    renderRow: (r) => el("tr", {}, el("td", { text: String(r.index + 1) }),
      el("td", { text: Object.entries(r.variables).map(([k, v]) => `${k}: ${v}`).join("\n") }),
      el("td", { text: r.expected ?? "" })),
  });

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
    rows.reset();
  }
  $("version-select").addEventListener("change", () => loadVersions($("version-select").value));

  async function importFile(dryRun) {
    const report = $("import-report");
    const file = $("import-file").files[0];
    if (!file) { report.replaceChildren(el("p", { class: "error", text: "Choose a CSV or JSONL file first." })); return; }
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
    await loadPromptVersions();
  }
  async function loadPromptVersions() {
    const prompt = $("col-prompt").value;
    const versions = prompt ? await apiAll(`/api/prompts/${prompt}/versions`) : [];
    $("col-version").replaceChildren(...versions.map((v) =>
      el("option", { value: v.id, text: `v${v.number}${v.message ? " · " + v.message : ""}` })));
  }
  $("col-prompt").addEventListener("change", loadPromptVersions);
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
        dataset: cfg.dataset.id, dataset_version: version,
        columns: columns.map((c) => ({ prompt: c.prompt, version: c.version })) } });
      $("run-estimate").textContent = `Estimate: ${describeEstimate(e)}`;
    } catch (err) {
      $("run-estimate").textContent = `No estimate: ${err.message}`;
    }
  }
  $("col-add").addEventListener("click", () => {
    const p = $("col-prompt"), v = $("col-version");
    if (!v.value) return;
    columns.push({ prompt: p.value, version: v.value, title: p.selectedOptions[0].textContent,
                   number: v.selectedOptions[0].textContent.split(" ")[0].slice(1) });
    renderColumns();
  });

  async function loadEvaluators() {
    const list = await api("/api/evals/evaluators");
    // Evaluators that need arguments (regex, json_schema) are set up through the API.
    const simple = list.filter((e) => !["regex", "json_schema"].includes(e.name));
    $("evaluator-boxes").replaceChildren(...simple.map((e) => el("label", { title: e.doc },
      el("input", { type: "checkbox", value: e.name, checked: e.name === "exact" }), ` ${e.name}`)));
  }
  $("run-start").addEventListener("click", async () => {
    const evaluators = [...document.querySelectorAll("#evaluator-boxes input:checked")].map((i) => i.value);
    try {
      const run = await api("/api/evals/runs", { method: "POST", body: {
        dataset: cfg.dataset.id, dataset_version: version, evaluators,
        columns: columns.map((c) => ({ prompt: c.prompt, version: c.version })) } });
      window.location.href = `/evals/runs/${run.id}/`;
    } catch (err) {
      showAlert($("run-error"), err.message);
    }
  });
  async function loadRuns() {
    const page = await api(`/api/evals/runs?dataset=${cfg.dataset.id}`);
    $("dataset-runs").replaceChildren(...(page.results.length ? page.results.map((r) => el("li", {},
      el("a", { href: `/evals/runs/${r.id}/`, text: `${r.name || "Run"} · v${r.dataset_version_number} · ` +
        r.columns.map(promptName).join(" vs ") }),
      " ", el("span", { class: "badge muted", text: r.status }))) : [el("li", { class: "hint", text: "No runs yet." })]));
  }
  Promise.all([loadVersions(), loadPrompts(), loadEvaluators(), loadRuns()])
    .catch((err) => showAlert($("page-error"), err.message));
}

// A column whose prompt the reader may not view comes redacted: no title, output or message.
const HIDDEN = "a prompt you cannot view";
const promptName = (c) => (c.redacted ? HIDDEN : `${c.prompt_title} v${c.version_number}`);
// A chart legend entry in its column's colour (set through CSSOM: the CSP allows no style attribute).
function legendItem(colour, text) {
  const item = el("span", { class: "legend-item" }, text);
  item.style.color = colour;
  return item;
}

// ---- A run ---------------------------------------------------------------
const COLOURS = ["#3b6fd4", "#d9822b", "#2e9e5b", "#b94a8f", "#7a6a2f", "#2b9fb3"];

function runPage() {
  const base = `/api/evals/runs/${cfg.run}`;
  let run = null, grid = null;
  const columnName = (c) => `${promptName(c)}${c.model_name ? " · " + c.model_name : ""}`;

  function renderDiff(diff) {
    const out = document.createDocumentFragment();
    for (const [op, text] of diff) {
      out.append(op === "=" ? document.createTextNode(text) : el(op === "+" ? "ins" : "del", { text }));
    }
    return out;
  }
  function renderCell(cell) {
    if (!cell) return el("td", { class: "err", text: "–" });
    if (cell.error) return el("td", { class: "err" }, el("strong", { text: cell.error }), ` ${cell.error_message || ""}`);
    const td = el("td", { class: cell.passed ? "pass" : "fail" });
    if (cell.redacted) td.append(el("em", { class: "hint", text: HIDDEN }));
    else td.append(cell.diff ? renderDiff(cell.diff) : document.createTextNode(cell.output));
    for (const [name, s] of Object.entries(cell.scores)) {
      td.append(el("span", { class: "ev-score", title: s.reason || "", text: `${name}: ${fmt(s.score)}${s.reason ? " · " + s.reason : ""}` }));
    }
    if (cell.served) td.append(el("span", { class: "ev-served", title: "the model@version that served this cell", text: cell.served }));
    return td;
  }
  function renderRow(row) {
    const byColumn = new Map(row.cells.map((c) => [c.column, c]));
    return el("tr", { "data-row": row.row_index }, el("td", { text: String(row.row_index + 1) }),
      el("td", { text: Object.entries(row.variables).map(([k, v]) => `${k}: ${v}`).join("\n") }),
      el("td", { text: row.expected ?? "" }),
      ...run.columns.map((c) => renderCell(byColumn.get(c.index))));
  }
  function renderAggregates() {
    const keys = run.evaluators.map((e) => e.key);
    document.querySelector("#agg-table thead").replaceChildren(el("tr", {}, el("th", { text: "Column" }),
      ...keys.map((k) => el("th", { text: `${k} mean [95% CI]` })), ...keys.map((k) => el("th", { text: `${k} pass` })),
      el("th", { text: "failed" }), el("th", { text: "latency p50" }), el("th", { text: "tokens in / out" }),
      el("th", { text: "served by" })));
    const summary = (run.summary && run.summary.columns) || [];
    document.querySelector("#agg-table tbody").replaceChildren(...run.columns.map((c) => {
      const s = summary[c.index];
      if (!s) return el("tr", {}, el("td", { text: columnName(c) }), el("td", { class: "hint", text: "when the run is done" }));
      return el("tr", { "data-column": c.index }, el("td", { text: columnName(c) }),
        ...keys.map((k) => el("td", { class: "ev-mean", text: `${fmt(s.scores[k].mean)} [${fmt(s.scores[k].ci95[0])}, ${fmt(s.scores[k].ci95[1])}]` })),
        ...keys.map((k) => el("td", { text: `${Math.round(100 * s.scores[k].pass_rate)}%` })),
        el("td", { text: String(s.failed) }), el("td", { text: s.latency_ms_p50 === null ? "–" : `${Math.round(s.latency_ms_p50)} ms` }),
        el("td", { text: `${s.prompt_tokens} / ${s.completion_tokens}` }),
        el("td", { class: "ev-served-by", text: Object.entries(s.served || {}).map(([name, n]) => `${name} (${n})`).join(", ") || "–" }));
    }));
    const select = $("chart-evaluator");
    if (!select.options.length) select.replaceChildren(...keys.map((k) => el("option", { value: k, text: k })));
    renderChart();
  }
  function renderChart() {
    const svg = $("chart"), key = $("chart-evaluator").value;
    const summary = (run.summary && run.summary.columns) || [];
    const ns = "http://www.w3.org/2000/svg";
    const node = (tag, attrs) => { const n = document.createElementNS(ns, tag); for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v); return n; };
    svg.replaceChildren();
    if (!summary.length || !key) return;
    const hists = summary.map((s) => s.scores[key].histogram.map((n) => n / Math.max(1, s.cells)));
    const width = 640, height = 200, pad = 24, bins = 10, groups = hists.length;
    const bw = (width - 2 * pad) / bins, inner = (bw - 4) / groups;
    const top = Math.max(0.01, ...hists.flat());
    hists.forEach((hist, g) => hist.forEach((share, b) => {
      const h = (height - 2 * pad) * share / top;
      const bar = node("rect", { x: pad + b * bw + 2 + g * inner, y: height - pad - h, width: Math.max(1, inner - 1),
                                 height: h, fill: COLOURS[g % COLOURS.length], class: "bar", "data-column": g, "data-bin": b });
      const title = node("title", {});
      title.textContent = `${columnName(run.columns[g])}: ${Math.round(share * 100)}% scored ${b / 10}–${(b + 1) / 10}`;
      bar.append(title);
      svg.append(bar);
    }));
    for (let b = 0; b <= bins; b += 5) {
      const label = node("text", { x: pad + b * bw, y: height - 6, "font-size": 11 });
      label.textContent = String(b / 10);
      svg.append(label);
    }
    $("chart-legend").replaceChildren(...run.columns.map((c, g) =>
      legendItem(COLOURS[g % COLOURS.length], `■ ${columnName(c)}`)));
  }
  $("chart-evaluator").addEventListener("change", renderChart);

  function renderStatus() {
    $("run-status").textContent = run.status;
    $("run-progress").max = run.total;
    $("run-progress").value = run.completed;
    $("run-counts").textContent = `${run.completed} / ${run.total} cells${run.failed ? `, ${run.failed} failed` : ""}`;
    $("run-cancel").hidden = !["queued", "running"].includes(run.status);
  }
  function setUpGrid() {
    document.querySelector("#grid thead").replaceChildren(el("tr", {}, el("th", { text: "#" }), el("th", { text: "Variables" }),
      el("th", { text: "Expected" }), ...run.columns.map((c) => el("th", { text: columnName(c) }))));
    grid = lazyPages({
      sentinel: $("grid-more"), tbody: document.querySelector("#grid tbody"), renderRow,
      fetchPage: (start) => api(`${base}/results?start=${start}&limit=100${$("grid-filter").value ? "&filter=" + $("grid-filter").value : ""}`),
    });
    grid.reset();
  }
  $("grid-filter").addEventListener("change", () => grid && grid.reset());
  $("run-cancel").addEventListener("click", async () => {
    try { run = await api(`${base}/cancel`, { method: "POST" }); renderStatus(); } catch (err) { showAlert($("page-error"), err.message); }
  });

  async function poll() {
    try {
      const wasActive = run && ["queued", "running"].includes(run.status);
      run = await api(base);
      renderStatus();
      if (!grid) { setUpGrid(); renderAggregates(); }
      const active = ["queued", "running"].includes(run.status);
      if (wasActive && !active) { renderAggregates(); grid.reset(); }
      if (active) setTimeout(poll, 1000);
    } catch (err) {
      showAlert($("page-error"), err.message);
    }
  }
  poll();
}

({ home: homePage, dataset: datasetPage, run: runPage })[cfg.page]();
