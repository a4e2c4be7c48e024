// An evaluation run's page: progress, column aggregates (with the spread across repeats), the
// score chart and the lazy grid. Everything goes through the REST API.
import { api, el, pageConfig, showAlert } from "../playground/api.js";

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

// A column whose prompt the reader may not view comes redacted: no title, output or message.
const HIDDEN = "a prompt you cannot view";
export const promptName = (c) => (c.redacted ? HIDDEN : `${c.prompt_title} v${c.version_number}`);
// A chart legend entry in its column's colour (set through CSSOM: the CSP allows no style attribute).
function legendItem(colour, text) {
  const item = el("span", { class: "legend-item" }, text);
  item.style.color = colour;
  return item;
}

// ---- A run ---------------------------------------------------------------
const COLOURS = ["#3b6fd4", "#d9822b", "#2e9e5b", "#b94a8f", "#7a6a2f", "#2b9fb3"];

export function runPage() {
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
    else if (cell.tool_calls && cell.tool_calls.length) {
      for (const call of cell.tool_calls) td.append(el("code", { class: "ev-call", text: `${call.name}(${JSON.stringify(call.arguments)})` }));
    } else td.append(cell.diff ? renderDiff(cell.diff) : document.createTextNode(cell.output));
    for (const [name, s] of Object.entries(cell.scores)) {
      td.append(el("span", { class: "ev-score", title: s.reason || "", text: `${name}: ${fmt(s.score)}${s.reason ? " · " + s.reason : ""}` }));
    }
    if (cell.served) td.append(el("span", { class: "ev-served", title: "the model@version that served this cell", text: cell.served }));
    return td;
  }
  // With repeats, a column's first repeat shows, and a line sums up all of them.
  function renderRepeats(cells) {
    const td = renderCell(cells[0]);
    if (cells.length < 2) return td;
    const passed = cells.filter((c) => c.passed).length;
    const keys = Object.keys(cells[0].scores || {});
    const spread = keys.map((k) => {
      const values = cells.map((c) => (c.scores[k] ? c.scores[k].score : 0));
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      const sd = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
      return `${k} ${fmt(mean)} ± ${fmt(sd)}`;
    });
    td.append(el("span", { class: "ev-repeats", text: `${cells.length} repeats: ${passed} passed` +
      (spread.length ? ` · ${spread.join(" · ")}` : "") }));
    return td;
  }
  function renderRow(row) {
    const byColumn = new Map();
    for (const c of row.cells) byColumn.set(c.column, [...(byColumn.get(c.column) || []), c]);
    return el("tr", { "data-row": row.row_index }, el("td", { text: String(row.row_index + 1) }),
      el("td", { text: Object.entries(row.variables).map(([k, v]) => `${k}: ${v}`).join("\n") }),
      el("td", { text: row.expected ?? "" }),
      ...run.columns.map((c) => (byColumn.has(c.index) ? renderRepeats(byColumn.get(c.index)) : renderCell(null))));
  }
  function renderAggregates() {
    const keys = run.evaluators.map((e) => e.key);
    document.querySelector("#agg-table thead").replaceChildren(el("tr", {}, el("th", { text: "Column" }),
      ...keys.map((k) => el("th", { text: `${k} mean [95% CI]` })), ...keys.map((k) => el("th", { text: `${k} pass` })),
      ...(run.repeats > 1 ? keys.map((k) => el("th", { text: `${k} spread across ${run.repeats} repeats`,
        title: "The mean of each row's score standard deviation across repeats; rows whose repeats disagree" })) : []),
      el("th", { text: "failed" }), el("th", { text: "latency p50" }), el("th", { text: "tokens in / out" }),
      el("th", { text: "served by" })));
    const summary = (run.summary && run.summary.columns) || [];
    document.querySelector("#agg-table tbody").replaceChildren(...run.columns.map((c) => {
      const s = summary[c.index];
      if (!s) return el("tr", {}, el("td", { text: columnName(c) }), el("td", { class: "hint", text: "when the run is done" }));
      return el("tr", { "data-column": c.index }, el("td", { text: columnName(c) }),
        ...keys.map((k) => el("td", { class: "ev-mean", text: `${fmt(s.scores[k].mean)} [${fmt(s.scores[k].ci95[0])}, ${fmt(s.scores[k].ci95[1])}]` })),
        ...keys.map((k) => el("td", { text: `${Math.round(100 * s.scores[k].pass_rate)}%` })),
        ...(run.repeats > 1 ? keys.map((k) => el("td", { class: "ev-spread",
          text: `sd ${fmt(s.scores[k].row_sd_mean)} (max ${fmt(s.scores[k].row_sd_max)}) · ${s.scores[k].unstable_rows} unstable rows` })) : []),
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
    $("run-delete").hidden = !cfg.mayDelete || ["queued", "running"].includes(run.status);
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
  $("run-delete").addEventListener("click", async () => {
    if (!window.confirm("Delete this run and its results? This cannot be undone.")) return;
    try { await api(base, { method: "DELETE" }); window.location.href = cfg.datasetUrl; }
    catch (err) { showAlert($("page-error"), err.message); }
  });
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
