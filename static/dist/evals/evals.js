// static/js/playground/api.js
var ApiError = class extends Error {
  constructor(status, body, retryAfter = null) {
    const err = body && body.error || {};
    super(err.message || `The server answered ${status}.`);
    this.status = status;
    this.code = err.code || (status === 0 ? "network_error" : "http_" + status);
    this.field = err.field || null;
    this.details = err;
    this.retryAfter = retryAfter;
  }
};
function csrfToken() {
  const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}
function pageConfig() {
  return JSON.parse(document.getElementById("page-config").textContent);
}
function shareToken() {
  const node = document.getElementById("page-config");
  return node ? JSON.parse(node.textContent).shareToken : void 0;
}
function headers(extra = {}) {
  const token = shareToken();
  return {
    "X-CSRFToken": csrfToken(),
    "Accept": "application/json",
    ...token ? { "X-Share-Token": token } : {},
    ...extra
  };
}
async function errorFrom(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
  }
  const retry = res.headers.get("Retry-After");
  return new ApiError(res.status, body, retry === null ? null : Number(retry));
}
async function api(path, { method = "GET", body, signal } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      signal,
      credentials: "same-origin",
      headers: headers(body === void 0 ? {} : { "Content-Type": "application/json" }),
      body: body === void 0 ? void 0 : JSON.stringify(body)
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, { error: { message: "Could not reach the server. Check your connection and try again." } });
  }
  if (!res.ok) throw await errorFrom(res);
  return res.status === 204 ? null : res.json();
}
async function apiAll(path) {
  const out = [];
  let next = path;
  while (next) {
    const page = await api(next);
    out.push(...page.results);
    next = page.next;
  }
  return out;
}
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== false && v !== null && v !== void 0) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== void 0) node.append(c);
  return node;
}
function showAlert(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// static/js/playground/estimate.js
function describeEstimate(e) {
  const n = e.items.reduce((a, i) => a + i.count, 0);
  const cost = e.cost_usd === null ? "cost not priced" : `at most $${e.cost_usd.toFixed(4)}`;
  const time = e.seconds === null ? "no live worker to time it on" : `about ${e.seconds < 1 ? "<1" : Math.round(e.seconds)} s at the pool's current rate`;
  return `${n} run${n === 1 ? "" : "s"}: ${cost}, ${time}.`;
}

// static/js/evals/grid.js
var NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
var SPECIAL = /* @__PURE__ */ new Set(["expected", "metadata"]);
function rowsGrid({ base, table, more, canEdit, onSaved, onStatus }) {
  const head = table.querySelector("thead");
  const saved = table.querySelector("tbody");
  const added = el("tbody", { class: "ev-new-rows" });
  table.append(added);
  let version = null, info = null, columns = [], rows = /* @__PURE__ */ new Map(), undo = [], seq = 0, next = 0, loading = false, token = 0;
  const text = (value) => value === null || value === void 0 ? "" : String(value);
  const changed = () => undo.length > 0;
  function status(message = "", kind = "hint", errors = []) {
    const pending = [...rows.values()].filter((r) => r.deleted || !r.key || isEdited(r)).length;
    onStatus({ pending, canUndo: undo.length > 0, message, kind, errors });
  }
  function header() {
    head.replaceChildren(el(
      "tr",
      {},
      el("th", { text: "#" }),
      ...columns.map((c) => el("th", { text: c, "data-col": c })),
      el("th", { text: "expected", title: "What the evaluators compare the output with (optional)" }),
      canEdit ? el("th", { text: "", class: "ev-row-actions" }) : null
    ));
  }
  function isEdited(row) {
    if (!row.key) return true;
    if (text(row.current.expected) !== text(row.original.expected)) return true;
    return columns.some((c) => text(row.current.variables[c]) !== text(row.original.variables[c]));
  }
  function cell(row, col, number) {
    const value = col === null ? row.current.expected : row.current.variables[col];
    const td = el("td", { text: text(value), "data-col": col === null ? "expected" : col });
    if (!canEdit) return td;
    td.contentEditable = "plaintext-only";
    td.setAttribute("role", "textbox");
    td.setAttribute("aria-label", `${col === null ? "expected" : col}, row ${number}`);
    let before = null;
    td.addEventListener("focus", () => {
      before = td.textContent;
    });
    td.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        td.blur();
      }
      if (event.key === "Escape") {
        td.textContent = before;
        td.blur();
      }
    });
    td.addEventListener("blur", () => {
      const after = td.textContent;
      if (before === null || after === before) return;
      set(row, col, after);
      undo.push({ type: "cell", row, col, before, after });
      before = null;
      status();
    });
    return td;
  }
  function set(row, col, value) {
    if (col === null) row.current.expected = value === "" ? null : value;
    else row.current.variables[col] = value;
    row.tr.classList.toggle("edited", isEdited(row));
  }
  function render(row) {
    const number = row.key ? String(row.index + 1) : "new";
    const tr = el("tr", { "data-key": row.key || "", "data-id": row.id });
    row.tr = tr;
    tr.append(
      el("td", { class: "ev-row-num", text: number }),
      ...columns.map((c) => cell(row, c, number)),
      cell(row, null, number)
    );
    if (canEdit) {
      tr.append(el("td", { class: "ev-row-actions" }, el("button", {
        type: "button",
        class: "btn small ev-row-delete",
        text: "Delete",
        "aria-label": `Delete row ${number}`,
        onclick: () => {
          toggleDeleted(row);
          undo.push({ type: "delete", row });
          status();
        }
      })));
    }
    tr.classList.toggle("deleted", row.deleted);
    tr.classList.toggle("edited", isEdited(row));
    return tr;
  }
  function toggleDeleted(row) {
    row.deleted = !row.deleted;
    row.tr.classList.toggle("deleted", row.deleted);
    row.tr.querySelector(".ev-row-delete").textContent = row.deleted ? "Restore" : "Delete";
    for (const td of row.tr.querySelectorAll("td[data-col]")) td.contentEditable = row.deleted ? "false" : "plaintext-only";
  }
  function addRow(values = {}) {
    const row = {
      id: `new-${++seq}`,
      key: null,
      deleted: false,
      original: null,
      current: { variables: { ...values }, expected: null }
    };
    rows.set(row.id, row);
    added.append(render(row));
    if (next === null) more.textContent = "";
    undo.push({ type: "add", row });
    status();
    row.tr.querySelector("td[data-col]")?.focus();
    return row;
  }
  function addColumn(name) {
    name = name.trim();
    if (!NAME.test(name) || SPECIAL.has(name)) return `${name || "A name"} is not a variable name: letters, digits and _, not starting with a digit.`;
    if (columns.includes(name)) return `There is a column ${name} already.`;
    columns.push(name);
    undo.push({ type: "column", name });
    rerender();
    status();
    return null;
  }
  function rerender() {
    header();
    for (const row of rows.values()) row.tr.replaceWith(render(row));
  }
  function undoLast() {
    const step = undo.pop();
    if (!step) return;
    if (step.type === "cell") {
      set(step.row, step.col, step.before);
      const td = step.row.tr.querySelector(`td[data-col="${step.col === null ? "expected" : step.col}"]`);
      td.textContent = step.before;
    } else if (step.type === "delete") {
      toggleDeleted(step.row);
    } else if (step.type === "add") {
      rows.delete(step.row.id);
      step.row.tr.remove();
    } else if (step.type === "column") {
      columns = columns.filter((c) => c !== step.name);
      for (const row of rows.values()) delete row.current.variables[step.name];
      rerender();
    }
    status();
  }
  function edits() {
    const body = { add: [], update: {}, delete: [] };
    const plain = (row) => {
      const variables = {};
      for (const c of columns) {
        const value = row.current.variables[c];
        if (value === void 0 || value === "" && (!row.original || !(c in row.original.variables))) continue;
        variables[c] = value;
      }
      return { variables, expected: row.current.expected, metadata: row.original ? row.original.metadata : {} };
    };
    const order = [];
    for (const row of rows.values()) {
      if (row.deleted) {
        if (row.key) body.delete.push(row.key);
        continue;
      }
      if (!row.key) {
        body.add.push(plain(row));
        order.push(row);
      } else if (isEdited(row)) body.update[row.key] = plain(row);
    }
    return { body, order };
  }
  function markError(err, order) {
    for (const tr of table.querySelectorAll("tr.row-error")) {
      tr.classList.remove("row-error");
      tr.removeAttribute("title");
    }
    const param = err.details && err.details.param || "";
    const m = param.match(/^add\[(\d+)\]/) || param.match(/^update\.([0-9a-f-]{36})/);
    const row = m ? param.startsWith("add") ? order[Number(m[1])] : [...rows.values()].find((r) => r.key === m[1]) : null;
    if (row) {
      row.tr.classList.add("row-error");
      row.tr.title = err.message;
    }
  }
  async function save() {
    document.activeElement?.blur?.();
    const { body, order } = edits();
    if (!body.add.length && !body.delete.length && !Object.keys(body.update).length) {
      status("Nothing to save.");
      return;
    }
    try {
      const made = await api(`${base}/versions`, { method: "POST", body: { base: version, ...body, message: "edited in the grid" } });
      undo = [];
      await onSaved(made, `Saved as version ${made.number}.`);
    } catch (err) {
      markError(err, order);
      status(err.message, "error");
    }
  }
  function pasteText(raw) {
    const textBody = raw.replace(/\r\n?/g, "\n").replace(/\n+$/, "");
    const first = textBody.split("\n", 1)[0].split("	").map((s) => s.trim());
    const known = /* @__PURE__ */ new Set([...columns, "expected"]);
    const hasHeader = first.every((c) => NAME.test(c)) && first.some((c) => known.has(c));
    if (hasHeader) return textBody;
    if (!columns.length) return null;
    return [...columns, "expected"].join("	") + "\n" + textBody;
  }
  async function paste(raw) {
    if (changed()) {
      status("Save or discard your edits first, then paste.", "error");
      return null;
    }
    const body = pasteText(raw);
    if (body === null) {
      status("The dataset has no columns yet: paste a first line naming them (for example question, then expected).", "error");
      return null;
    }
    try {
      const result = await api(`${base}/import`, { method: "POST", body: {
        text: body,
        format: "tsv",
        base: version,
        mode: "append",
        skip_invalid: true,
        message: "pasted rows"
      } });
      const errors = result.errors.map((e) => `Pasted row ${e.line - 1}: ${e.message}`);
      await onSaved(result.version, `Pasted ${result.valid} rows as version ${result.version.number}` + (result.error_count ? `; ${result.error_count} not saved:` : "."), errors);
      return result;
    } catch (err) {
      const errors = (err.details?.errors || []).map((e) => `Pasted row ${e.line - 1}: ${e.message}`);
      status(err.message, "error", errors);
      return null;
    }
  }
  async function loadPage() {
    if (loading || next === null || !version) return;
    loading = true;
    const mine = token;
    try {
      const page = await api(`${base}/versions/${version}/rows?start=${next}&limit=100`);
      if (mine !== token) return;
      for (const r of page.rows) {
        const row = {
          id: r.key,
          key: r.key,
          index: r.index,
          deleted: false,
          original: { variables: r.variables, expected: r.expected, metadata: r.metadata },
          current: { variables: { ...r.variables }, expected: r.expected }
        };
        rows.set(row.id, row);
        saved.append(render(row));
      }
      next = page.next;
      more.textContent = next === null ? rows.size ? "" : "No rows yet." : "Loading more\u2026";
    } catch (err) {
      more.textContent = `Could not load rows: ${err.message}`;
      next = null;
    } finally {
      loading = false;
    }
    const rect = more.getBoundingClientRect();
    if (next !== null && rect.top < window.innerHeight) loadPage();
  }
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadPage();
  }).observe(more);
  if (canEdit) {
    table.addEventListener("paste", (event) => {
      const raw = event.clipboardData.getData("text/plain");
      if (!/[\t\n]/.test(raw.replace(/\n+$/, ""))) return;
      event.preventDefault();
      paste(raw);
    });
  }
  return {
    load(versionInfo) {
      token += 1;
      info = versionInfo;
      version = versionInfo ? versionInfo.id : null;
      columns = versionInfo ? [...versionInfo.variables] : [];
      rows = /* @__PURE__ */ new Map();
      undo = [];
      next = version ? 0 : null;
      saved.replaceChildren();
      added.replaceChildren();
      header();
      more.textContent = version ? "Loading\u2026" : "No rows yet: add a row, or paste or import some.";
      status();
      loadPage();
    },
    addRow,
    addColumn,
    undo: undoLast,
    save,
    paste,
    changed,
    discard() {
      this.load(info);
    }
  };
}

// static/js/evals/picker.js
var ARGS = {
  contains: () => el("input", {
    type: "text",
    "data-arg": "value",
    placeholder: "text to find (default: the expected output)",
    "aria-label": "contains: text to find"
  }),
  regex: () => el("input", {
    type: "text",
    "data-arg": "pattern",
    placeholder: "pattern (RE2), e.g. ^yes\\b",
    "aria-label": "regex: pattern"
  }),
  json_schema: () => el("textarea", {
    "data-arg": "schema",
    rows: "3",
    placeholder: '{"type": "object", "required": ["answer"]}',
    "aria-label": "json_schema: schema"
  }),
  tool_calls: () => el(
    "select",
    { "data-arg": "arguments", "aria-label": "tool_calls: arguments" },
    el("option", { value: "exact", text: "arguments must match exactly" }),
    el("option", { value: "subset", text: "extra arguments allowed" })
  )
};
var withCode = (text) => text.split("`").map((part, i) => i % 2 ? el("code", { text: part }) : part);
function evaluatorPicker({
  container,
  note,
  evaluators,
  emptyNote = "No evaluator picked: the run stores each output and scores nothing."
}) {
  const shown = evaluators.filter((e) => e.name !== "judge");
  container.replaceChildren(
    ...shown.map((e) => {
      const box = el("input", { type: "checkbox", value: e.name, id: `ev-${e.name}` });
      const args = ARGS[e.name] ? el("div", { class: "ev-args", hidden: true }, ARGS[e.name]()) : null;
      box.addEventListener("change", () => {
        if (args) args.hidden = !box.checked;
        describe();
      });
      return el(
        "div",
        { class: "ev-pick", "data-evaluator": e.name },
        el("label", { for: `ev-${e.name}` }, box, " ", el("strong", { text: e.name })),
        e.needs_expected ? el("span", {
          class: "badge muted",
          text: "needs expected",
          title: "A row without an expected output scores 0 on it"
        }) : null,
        el("p", { class: "hint ev-doc" }, ...withCode(e.doc)),
        args
      );
    }),
    el("p", { class: "hint", text: "judge (LLM-as-judge: a saved prompt version scores each output) is set up through the API." })
  );
  function picked() {
    return [...container.querySelectorAll(".ev-pick")].filter((d) => d.querySelector("input[type=checkbox]").checked);
  }
  function describe() {
    const names = picked().map((d) => d.dataset.evaluator);
    note.textContent = names.length ? `Scored by ${names.join(", ")}.` : emptyNote;
  }
  describe();
  function specs() {
    return picked().map((d) => {
      const name = d.dataset.evaluator, args = {};
      for (const input of d.querySelectorAll("[data-arg]")) {
        const value = input.value.trim();
        if (!value) continue;
        if (input.dataset.arg === "schema") {
          try {
            args.schema = JSON.parse(value);
          } catch {
            throw new Error("json_schema: the schema is not JSON.");
          }
        } else args[input.dataset.arg] = value;
      }
      if (name === "regex" && !args.pattern) throw new Error("regex: give a pattern.");
      if (name === "json_schema" && !args.schema) throw new Error("json_schema: give a schema.");
      return Object.keys(args).length ? { name, args } : name;
    });
  }
  return { specs };
}

// static/js/evals/run.js
var $ = (id) => document.getElementById(id);
var cfg = pageConfig();
var fmt = (x, digits = 2) => x === null || x === void 0 ? "\u2013" : Number(x).toFixed(digits);
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
      sentinel.textContent = next === null ? tbody.children.length ? "" : "No rows." : "Loading more\u2026";
    } catch (err) {
      sentinel.textContent = `Could not load rows: ${err.message}`;
      next = null;
    } finally {
      loading = false;
    }
    const rect = sentinel.getBoundingClientRect();
    if (next !== null && rect.top < window.innerHeight) load();
  }
  observer.observe(sentinel);
  return {
    reset() {
      token += 1;
      next = 0;
      loading = false;
      tbody.replaceChildren();
      sentinel.textContent = "Loading\u2026";
      load();
    }
  };
}
var HIDDEN = "a prompt you cannot view";
var promptName = (c) => c.redacted ? HIDDEN : `${c.prompt_title} v${c.version_number}`;
function legendItem(colour, text) {
  const item = el("span", { class: "legend-item" }, text);
  item.style.color = colour;
  return item;
}
var COLOURS = ["#3b6fd4", "#d9822b", "#2e9e5b", "#b94a8f", "#7a6a2f", "#2b9fb3"];
function runPage() {
  const base = `/api/evals/runs/${cfg.run}`;
  let run = null, grid = null;
  const columnName = (c) => `${promptName(c)}${c.model_name ? " \xB7 " + c.model_name : ""}`;
  function renderDiff(diff) {
    const out = document.createDocumentFragment();
    for (const [op, text] of diff) {
      out.append(op === "=" ? document.createTextNode(text) : el(op === "+" ? "ins" : "del", { text }));
    }
    return out;
  }
  function renderCell(cell) {
    if (!cell) return el("td", { class: "err", text: "\u2013" });
    if (cell.error) return el("td", { class: "err" }, el("strong", { text: cell.error }), ` ${cell.error_message || ""}`);
    const td = el("td", { class: cell.passed ? "pass" : "fail" });
    if (cell.redacted) td.append(el("em", { class: "hint", text: HIDDEN }));
    else if (cell.tool_calls && cell.tool_calls.length) {
      for (const call of cell.tool_calls) td.append(el("code", { class: "ev-call", text: `${call.name}(${JSON.stringify(call.arguments)})` }));
    } else td.append(cell.diff ? renderDiff(cell.diff) : document.createTextNode(cell.output));
    for (const [name, s] of Object.entries(cell.scores)) {
      td.append(el("span", { class: "ev-score", title: s.reason || "", text: `${name}: ${fmt(s.score)}${s.reason ? " \xB7 " + s.reason : ""}` }));
    }
    if (cell.served) td.append(el("span", { class: "ev-served", title: "the model@version that served this cell", text: cell.served }));
    return td;
  }
  function renderRepeats(cells) {
    const td = renderCell(cells[0]);
    if (cells.length < 2) return td;
    const passed = cells.filter((c) => c.passed).length;
    const keys = Object.keys(cells[0].scores || {});
    const spread = keys.map((k) => {
      const values = cells.map((c) => c.scores[k] ? c.scores[k].score : 0);
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      const sd = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
      return `${k} ${fmt(mean)} \xB1 ${fmt(sd)}`;
    });
    td.append(el("span", { class: "ev-repeats", text: `${cells.length} repeats: ${passed} passed` + (spread.length ? ` \xB7 ${spread.join(" \xB7 ")}` : "") }));
    return td;
  }
  function renderRow(row) {
    const byColumn = /* @__PURE__ */ new Map();
    for (const c of row.cells) byColumn.set(c.column, [...byColumn.get(c.column) || [], c]);
    return el(
      "tr",
      { "data-row": row.row_index },
      el("td", { text: String(row.row_index + 1) }),
      el("td", { text: Object.entries(row.variables).map(([k, v]) => `${k}: ${v}`).join("\n") }),
      el("td", { text: row.expected ?? "" }),
      ...run.columns.map((c) => byColumn.has(c.index) ? renderRepeats(byColumn.get(c.index)) : renderCell(null))
    );
  }
  function renderAggregates() {
    const keys = run.evaluators.map((e) => e.key);
    document.querySelector("#agg-table thead").replaceChildren(el(
      "tr",
      {},
      el("th", { text: "Column" }),
      ...keys.map((k) => el("th", { text: `${k} mean [95% CI]` })),
      ...keys.map((k) => el("th", { text: `${k} pass` })),
      ...run.repeats > 1 ? keys.map((k) => el("th", {
        text: `${k} spread across ${run.repeats} repeats`,
        title: "The mean of each row's score standard deviation across repeats; rows whose repeats disagree"
      })) : [],
      el("th", { text: "failed" }),
      el("th", { text: "latency p50" }),
      el("th", { text: "tokens in / out" }),
      el("th", { text: "served by" })
    ));
    const summary = run.summary && run.summary.columns || [];
    document.querySelector("#agg-table tbody").replaceChildren(...run.columns.map((c) => {
      const s = summary[c.index];
      if (!s) return el("tr", {}, el("td", { text: columnName(c) }), el("td", { class: "hint", text: "when the run is done" }));
      return el(
        "tr",
        { "data-column": c.index },
        el("td", { text: columnName(c) }),
        ...keys.map((k) => el("td", { class: "ev-mean", text: `${fmt(s.scores[k].mean)} [${fmt(s.scores[k].ci95[0])}, ${fmt(s.scores[k].ci95[1])}]` })),
        ...keys.map((k) => el("td", { text: `${Math.round(100 * s.scores[k].pass_rate)}%` })),
        ...run.repeats > 1 ? keys.map((k) => el("td", {
          class: "ev-spread",
          text: `sd ${fmt(s.scores[k].row_sd_mean)} (max ${fmt(s.scores[k].row_sd_max)}) \xB7 ${s.scores[k].unstable_rows} unstable rows`
        })) : [],
        el("td", { text: String(s.failed) }),
        el("td", { text: s.latency_ms_p50 === null ? "\u2013" : `${Math.round(s.latency_ms_p50)} ms` }),
        el("td", { text: `${s.prompt_tokens} / ${s.completion_tokens}` }),
        el("td", { class: "ev-served-by", text: Object.entries(s.served || {}).map(([name, n]) => `${name} (${n})`).join(", ") || "\u2013" })
      );
    }));
    const select = $("chart-evaluator");
    if (!select.options.length) select.replaceChildren(...keys.map((k) => el("option", { value: k, text: k })));
    renderChart();
  }
  function renderChart() {
    const svg = $("chart"), key = $("chart-evaluator").value;
    const summary = run.summary && run.summary.columns || [];
    const ns = "http://www.w3.org/2000/svg";
    const node = (tag, attrs) => {
      const n = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
      return n;
    };
    svg.replaceChildren();
    if (!summary.length || !key) return;
    const hists = summary.map((s) => s.scores[key].histogram.map((n) => n / Math.max(1, s.cells)));
    const width = 640, height = 200, pad = 24, bins = 10, groups = hists.length;
    const bw = (width - 2 * pad) / bins, inner = (bw - 4) / groups;
    const top = Math.max(0.01, ...hists.flat());
    hists.forEach((hist, g) => hist.forEach((share, b) => {
      const h = (height - 2 * pad) * share / top;
      const bar = node("rect", {
        x: pad + b * bw + 2 + g * inner,
        y: height - pad - h,
        width: Math.max(1, inner - 1),
        height: h,
        fill: COLOURS[g % COLOURS.length],
        class: "bar",
        "data-column": g,
        "data-bin": b
      });
      const title = node("title", {});
      title.textContent = `${columnName(run.columns[g])}: ${Math.round(share * 100)}% scored ${b / 10}\u2013${(b + 1) / 10}`;
      bar.append(title);
      svg.append(bar);
    }));
    for (let b = 0; b <= bins; b += 5) {
      const label = node("text", { x: pad + b * bw, y: height - 6, "font-size": 11 });
      label.textContent = String(b / 10);
      svg.append(label);
    }
    $("chart-legend").replaceChildren(...run.columns.map((c, g) => legendItem(COLOURS[g % COLOURS.length], `\u25A0 ${columnName(c)}`)));
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
    document.querySelector("#grid thead").replaceChildren(el(
      "tr",
      {},
      el("th", { text: "#" }),
      el("th", { text: "Variables" }),
      el("th", { text: "Expected" }),
      ...run.columns.map((c) => el("th", { text: columnName(c) }))
    ));
    grid = lazyPages({
      sentinel: $("grid-more"),
      tbody: document.querySelector("#grid tbody"),
      renderRow,
      fetchPage: (start) => api(`${base}/results?start=${start}&limit=100${$("grid-filter").value ? "&filter=" + $("grid-filter").value : ""}`)
    });
    grid.reset();
  }
  $("grid-filter").addEventListener("change", () => grid && grid.reset());
  $("run-delete").addEventListener("click", async () => {
    if (!window.confirm("Delete this run and its results? This cannot be undone.")) return;
    try {
      await api(base, { method: "DELETE" });
      window.location.href = cfg.datasetUrl;
    } catch (err) {
      showAlert($("page-error"), err.message);
    }
  });
  $("run-cancel").addEventListener("click", async () => {
    try {
      run = await api(`${base}/cancel`, { method: "POST" });
      renderStatus();
    } catch (err) {
      showAlert($("page-error"), err.message);
    }
  });
  async function poll() {
    try {
      const wasActive = run && ["queued", "running"].includes(run.status);
      run = await api(base);
      renderStatus();
      if (!grid) {
        setUpGrid();
        renderAggregates();
      }
      const active = ["queued", "running"].includes(run.status);
      if (wasActive && !active) {
        renderAggregates();
        grid.reset();
      }
      if (active) setTimeout(poll, 1e3);
    } catch (err) {
      showAlert($("page-error"), err.message);
    }
  }
  poll();
}

// static/js/evals/evals.js
var $2 = (id) => document.getElementById(id);
var cfg2 = pageConfig();
function homePage() {
  $2("dataset-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const dataset = await api("/api/datasets/", { method: "POST", body: { name: $2("dataset-name").value.trim() } });
      window.location.href = `/evals/datasets/${dataset.id}/`;
    } catch (err) {
      showAlert($2("dataset-error"), err.message);
    }
  });
}
function datasetPage() {
  const base = `/api/datasets/${cfg2.dataset.id}`;
  let version = null, picker = null;
  const columns = [];
  function gridMessage({ pending = 0, canUndo = false, message = "", kind = "hint", errors = [] }) {
    if (!cfg2.canEdit) return;
    $2("grid-pending").textContent = pending ? `${pending} unsaved ${pending === 1 ? "row" : "rows"}` : "";
    $2("grid-undo").disabled = !canUndo;
    $2("grid-save").disabled = !pending;
    $2("grid-discard").disabled = !canUndo;
    const box = $2("grid-report");
    box.replaceChildren(
      ...message ? [el("p", { class: kind === "error" ? "error" : "ok", id: "grid-summary", text: message })] : [],
      ...errors.length ? [el("ul", {}, ...errors.map((e) => el("li", { class: "import-error", text: e })))] : []
    );
  }
  const grid = rowsGrid({
    base,
    table: $2("rows"),
    more: $2("rows-more"),
    canEdit: cfg2.canEdit,
    onStatus: gridMessage,
    onSaved: async (made, message, errors = []) => {
      await loadVersions(made.id);
      gridMessage({ message, kind: "ok", errors });
    }
  });
  if (cfg2.canEdit) {
    $2("grid-add-row").addEventListener("click", () => grid.addRow());
    $2("grid-undo").addEventListener("click", () => grid.undo());
    $2("grid-save").addEventListener("click", () => grid.save());
    $2("grid-discard").addEventListener("click", () => grid.discard());
    $2("grid-add-col").addEventListener("submit", (event) => {
      event.preventDefault();
      const problem = grid.addColumn($2("grid-col-name").value);
      if (problem) gridMessage({ message: problem, kind: "error", canUndo: grid.changed() });
      else $2("grid-col-name").value = "";
    });
    $2("paste-go").addEventListener("click", async () => {
      if (await grid.paste($2("paste-box").value)) $2("paste-box").value = "";
    });
    document.addEventListener("keydown", (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === "z" && !event.target.isContentEditable && !["INPUT", "TEXTAREA"].includes(event.target.tagName)) {
        grid.undo();
      }
    });
    window.addEventListener("beforeunload", (event) => {
      if (grid.changed()) event.preventDefault();
    });
  }
  async function loadVersions(select = null) {
    const versions = await apiAll(`${base}/versions`);
    $2("version-select").replaceChildren(...versions.map((v) => el("option", { value: v.id, text: `v${v.number} \xB7 ${v.row_count} rows${v.message ? " \xB7 " + v.message : ""}` })));
    version = select || versions[0] && versions[0].id || null;
    if (version) $2("version-select").value = version;
    const current = versions.find((v) => v.id === version);
    $2("row-count").textContent = current ? `(${current.row_count})` : "(no version yet)";
    for (const kind of ["csv", "jsonl"]) {
      $2(`export-${kind}`).href = version ? `${base}/versions/${version}/export?as=${kind}` : "#";
    }
    grid.load(current || null);
  }
  $2("version-select").addEventListener("change", () => {
    if (grid.changed() && !window.confirm("Discard the unsaved edits in the grid?")) {
      $2("version-select").value = version;
      return;
    }
    loadVersions($2("version-select").value);
  });
  async function importFile(dryRun) {
    const report = $2("import-report");
    const file = $2("import-file").files[0];
    if (!file) {
      report.replaceChildren(el("p", { class: "error", text: "Choose a CSV, TSV or JSONL file first." }));
      return;
    }
    if (!dryRun && grid.changed()) {
      report.replaceChildren(el("p", { class: "error", text: "Save or discard your edits in the grid first." }));
      return;
    }
    const form = new FormData();
    form.append("file", file);
    form.append("mode", $2("import-mode").value);
    if (version) form.append("base", version);
    form.append(dryRun ? "dry_run" : "skip_invalid", "true");
    report.replaceChildren(el("p", { class: "hint", text: dryRun ? "Checking\u2026" : "Importing\u2026" }));
    const res = await fetch(`${base}/import`, { method: "POST", body: form, credentials: "same-origin", headers: headers() });
    if (!res.ok) {
      const err = await errorFrom(res);
      report.replaceChildren(el("p", { class: "error", text: err.message }));
      return;
    }
    const body = await res.json();
    if (res.status === 202) {
      await followImport(body.import);
      return;
    }
    const summary = dryRun ? `${body.valid} rows are valid, ${body.error_count} have errors.` : `Imported ${body.valid} rows as version ${body.version.number}` + (body.error_count ? `; skipped ${body.error_count} with errors.` : ".");
    report.replaceChildren(
      el("p", { class: "ok", id: "import-summary", text: summary }),
      el("ul", {}, ...body.errors.map((e) => el("li", { class: "import-error", text: `Line ${e.line}: ${e.message}` })))
    );
    if (!dryRun) await loadVersions(body.version.id);
  }
  async function followImport(job) {
    const report = $2("import-report");
    const bar = el("progress", { id: "import-progress", max: String(job.lines_total), value: "0" });
    const label = el("p", { class: "hint", id: "import-phase", text: "Queued\u2026" });
    report.replaceChildren(label, bar);
    while (!["done", "failed"].includes(job.status)) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      job = await api(job.url);
      bar.value = job.lines_done;
      label.textContent = job.status === "writing" ? "Writing the new version\u2026" : `Parsing: line ${job.lines_done} of ${job.lines_total}`;
    }
    if (job.status === "failed") {
      report.replaceChildren(
        el("p", { class: "error", text: job.error.message }),
        el("ul", {}, ...job.errors.map((e) => el("li", { class: "import-error", text: `Line ${e.line}: ${e.message}` })))
      );
      return;
    }
    report.replaceChildren(el("p", { class: "ok", id: "import-summary", text: `Imported ${job.valid} rows as version ${job.version.number} in the background` + (job.error_count ? `; skipped ${job.error_count} with errors.` : ".") }));
    await loadVersions(job.version.id);
  }
  if (cfg2.canEdit) {
    $2("import-preview").addEventListener("click", () => importFile(true));
    $2("import-go").addEventListener("click", () => importFile(false));
  }
  async function loadPrompts() {
    const prompts = await apiAll("/api/prompts/");
    $2("col-prompt").replaceChildren(...prompts.map((p) => el("option", { value: p.id, text: p.title })));
    await Promise.all([loadPromptVersions(), showPin()]);
  }
  async function loadPromptVersions() {
    const prompt = $2("col-prompt").value;
    const versions = prompt ? await apiAll(`/api/prompts/${prompt}/versions`) : [];
    $2("col-version").replaceChildren(...versions.map((v) => el("option", { value: v.id, text: `v${v.number}${v.message ? " \xB7 " + v.message : ""}` })));
  }
  $2("col-prompt").addEventListener("change", loadPromptVersions);
  async function showPin() {
    const prompt = $2("col-prompt").value, report = $2("pin-report");
    const pin = prompt ? await api(`/api/prompts/${prompt}/eval-pin`) : { dataset: null };
    if (!pin.dataset) {
      report.textContent = PIN_HINT;
      return;
    }
    const title = $2("col-prompt").selectedOptions[0].textContent;
    if (pin.dataset !== cfg2.dataset.id) {
      report.textContent = `${title}'s saves run over the dataset ${pin.dataset_name}; pinning here replaces it.`;
      return;
    }
    const scored = pin.evaluators.length ? `scored by ${pin.evaluators.map((e) => e.key).join(", ")}` : "unscored";
    report.replaceChildren(
      el("span", {
        class: "ok",
        id: "pin-summary",
        text: `Pinned: each version saved on ${title} now runs over this dataset beside its parent, ${scored}. `
      }),
      el("a", { href: `/prompts/${prompt}/history/`, text: "Its history page" }),
      " shows the scores. ",
      el("button", { type: "button", class: "btn small", id: "pin-remove", text: "Unpin", onclick: async () => {
        try {
          await api(`/api/prompts/${prompt}/eval-pin`, { method: "DELETE" });
          await showPin();
        } catch (err) {
          showAlert($2("run-error"), err.message);
        }
      } })
    );
  }
  const PIN_HINT = $2("pin-report").textContent;
  $2("col-prompt").addEventListener("change", () => showPin().catch((err) => showAlert($2("run-error"), err.message)));
  function renderColumns() {
    $2("columns").replaceChildren(...columns.map((c, i) => el(
      "li",
      {},
      `${c.title} v${c.number} `,
      el("button", {
        type: "button",
        class: "btn small",
        text: "Remove",
        onclick: () => {
          columns.splice(i, 1);
          renderColumns();
        }
      })
    )));
    estimateRun();
  }
  async function estimateRun() {
    if (!columns.length) {
      $2("run-estimate").textContent = "";
      return;
    }
    try {
      const e = await api("/api/evals/estimate", { method: "POST", body: {
        dataset: cfg2.dataset.id,
        dataset_version: version,
        repeats: Number($2("run-repeats").value),
        columns: columns.map((c) => ({ prompt: c.prompt, version: c.version }))
      } });
      $2("run-estimate").textContent = `Estimate: ${describeEstimate(e)}`;
    } catch (err) {
      $2("run-estimate").textContent = `No estimate: ${err.message}`;
    }
  }
  $2("run-repeats").addEventListener("change", estimateRun);
  $2("col-add").addEventListener("click", () => {
    const p = $2("col-prompt"), v = $2("col-version");
    if (!v.value) return;
    columns.push({
      prompt: p.value,
      version: v.value,
      title: p.selectedOptions[0].textContent,
      number: v.selectedOptions[0].textContent.split(" ")[0].slice(1)
    });
    renderColumns();
  });
  async function loadEvaluators() {
    picker = evaluatorPicker({
      container: $2("evaluator-boxes"),
      note: $2("evaluator-note"),
      evaluators: await api("/api/evals/evaluators")
    });
  }
  $2("run-start").addEventListener("click", async () => {
    try {
      const evaluators = picker.specs();
      const run = await api("/api/evals/runs", { method: "POST", body: {
        dataset: cfg2.dataset.id,
        dataset_version: version,
        evaluators,
        repeats: Number($2("run-repeats").value),
        columns: columns.map((c) => ({ prompt: c.prompt, version: c.version }))
      } });
      window.location.href = `/evals/runs/${run.id}/`;
    } catch (err) {
      showAlert($2("run-error"), err.message);
    }
  });
  $2("pin-go").addEventListener("click", async () => {
    const prompt = $2("col-prompt");
    if (!prompt.value) {
      showAlert($2("run-error"), "Pick a prompt first.");
      return;
    }
    try {
      await api(`/api/prompts/${prompt.value}/eval-pin`, {
        method: "PUT",
        body: { dataset: cfg2.dataset.id, evaluators: picker.specs() }
      });
      await showPin();
    } catch (err) {
      showAlert($2("run-error"), err.message);
    }
  });
  async function loadRuns() {
    const page = await api(`/api/evals/runs?dataset=${cfg2.dataset.id}`);
    $2("dataset-runs").replaceChildren(...page.results.length ? page.results.map((r) => el(
      "li",
      { "data-run": r.id },
      el("a", { href: `/evals/runs/${r.id}/`, text: `${r.name || "Run"} \xB7 v${r.dataset_version_number} \xB7 ` + r.columns.map(promptName).join(" vs ") }),
      " ",
      el("span", { class: "badge muted", text: r.status }),
      " ",
      mayDelete(r) ? el("button", {
        type: "button",
        class: "btn small danger run-delete",
        text: "Delete",
        "aria-label": `Delete run ${r.name || r.id}`,
        onclick: () => deleteRun(r)
      }) : null
    )) : [el("li", { class: "hint", text: "No runs yet." })]);
  }
  const mayDelete = (r) => (r.owner === cfg2.username || cfg2.isOwner) && !["queued", "running"].includes(r.status);
  async function deleteRun(r) {
    if (!window.confirm("Delete this run and its results? This cannot be undone.")) return;
    try {
      await api(`/api/evals/runs/${r.id}`, { method: "DELETE" });
      await loadRuns();
    } catch (err) {
      showAlert($2("page-error"), err.message);
    }
  }
  Promise.all([loadVersions(), loadPrompts(), loadEvaluators(), loadRuns()]).catch((err) => showAlert($2("page-error"), err.message));
}
({ home: homePage, dataset: datasetPage, run: runPage })[cfg2.page]();
