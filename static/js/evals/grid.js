// The dataset page's rows as an editable grid: type into a cell, add and delete rows and
// variables, undo; "Save as new version" sends the edits as one new version (versions never
// change). Cells pasted from a spreadsheet (tab-separated) import at once as a new version:
// rows with the wrong number of cells are listed, the rest are saved.
import { api, el } from "../playground/api.js";

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SPECIAL = new Set(["expected", "metadata"]);

export function rowsGrid({ base, table, more, canEdit, onSaved, onStatus }) {
  const head = table.querySelector("thead");
  const saved = table.querySelector("tbody");
  const added = el("tbody", { class: "ev-new-rows" });
  table.append(added);
  let version = null, info = null, columns = [], rows = new Map(), undo = [], seq = 0, next = 0, loading = false, token = 0;

  const text = (value) => (value === null || value === undefined ? "" : String(value));
  const changed = () => undo.length > 0;

  function status(message = "", kind = "hint", errors = []) {
    const pending = [...rows.values()].filter((r) => r.deleted || !r.key || isEdited(r)).length;
    onStatus({ pending, canUndo: undo.length > 0, message, kind, errors });
  }

  function header() {
    head.replaceChildren(el("tr", {}, el("th", { text: "#" }),
      ...columns.map((c) => el("th", { text: c, "data-col": c })),
      el("th", { text: "expected", title: "What the evaluators compare the output with (optional)" }),
      canEdit ? el("th", { text: "", class: "ev-row-actions" }) : null));
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
    td.addEventListener("focus", () => { before = td.textContent; });
    td.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); td.blur(); }
      if (event.key === "Escape") { td.textContent = before; td.blur(); }
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
    tr.append(el("td", { class: "ev-row-num", text: number }), ...columns.map((c) => cell(row, c, number)),
      cell(row, null, number));
    if (canEdit) {
      tr.append(el("td", { class: "ev-row-actions" }, el("button", {
        type: "button", class: "btn small ev-row-delete", text: "Delete", "aria-label": `Delete row ${number}`,
        onclick: () => { toggleDeleted(row); undo.push({ type: "delete", row }); status(); } })));
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
    const row = { id: `new-${++seq}`, key: null, deleted: false, original: null,
                  current: { variables: { ...values }, expected: null } };
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

  // The edits as a version request: new rows, changed rows by key, deleted keys.
  function edits() {
    const body = { add: [], update: {}, delete: [] };
    const plain = (row) => {
      const variables = {};
      for (const c of columns) {
        const value = row.current.variables[c];
        if (value === undefined || (value === "" && (!row.original || !(c in row.original.variables)))) continue;
        variables[c] = value;
      }
      return { variables, expected: row.current.expected, metadata: row.original ? row.original.metadata : {} };
    };
    const order = [];
    for (const row of rows.values()) {
      if (row.deleted) { if (row.key) body.delete.push(row.key); continue; }
      if (!row.key) { body.add.push(plain(row)); order.push(row); } else if (isEdited(row)) body.update[row.key] = plain(row);
    }
    return { body, order };
  }

  // A refused save names its row in `param` (add[i]..., update.<key>...): that row is marked.
  function markError(err, order) {
    for (const tr of table.querySelectorAll("tr.row-error")) { tr.classList.remove("row-error"); tr.removeAttribute("title"); }
    const param = (err.details && err.details.param) || "";
    const m = param.match(/^add\[(\d+)\]/) || param.match(/^update\.([0-9a-f-]{36})/);
    const row = m ? (param.startsWith("add") ? order[Number(m[1])] : [...rows.values()].find((r) => r.key === m[1])) : null;
    if (row) { row.tr.classList.add("row-error"); row.tr.title = err.message; }
  }

  async function save() {
    document.activeElement?.blur?.();  // a cell being typed in commits first
    const { body, order } = edits();
    if (!body.add.length && !body.delete.length && !Object.keys(body.update).length) { status("Nothing to save."); return; }
    try {
      const made = await api(`${base}/versions`, { method: "POST", body: { base: version, ...body, message: "edited in the grid" } });
      undo = [];
      await onSaved(made, `Saved as version ${made.number}.`);
    } catch (err) {
      markError(err, order);
      status(err.message, "error");
    }
  }

  // Pasted cells: tab-separated lines. A first line of names (a variable of the grid, or expected)
  // is the header; else the grid's columns in order, then expected.
  function pasteText(raw) {
    const textBody = raw.replace(/\r\n?/g, "\n").replace(/\n+$/, "");
    const first = textBody.split("\n", 1)[0].split("\t").map((s) => s.trim());
    const known = new Set([...columns, "expected"]);
    const hasHeader = first.every((c) => NAME.test(c)) && first.some((c) => known.has(c));
    if (hasHeader) return textBody;
    if (!columns.length) return null;
    return [...columns, "expected"].join("\t") + "\n" + textBody;
  }

  async function paste(raw) {
    if (changed()) { status("Save or discard your edits first, then paste.", "error"); return null; }
    const body = pasteText(raw);
    if (body === null) {
      status("The dataset has no columns yet: paste a first line naming them (for example question, then expected).", "error");
      return null;
    }
    try {
      const result = await api(`${base}/import`, { method: "POST", body: {
        text: body, format: "tsv", base: version, mode: "append", skip_invalid: true, message: "pasted rows" } });
      // Line 1 is the header (the user's or the grid's): pasted row n is line n + 1.
      const errors = result.errors.map((e) => `Pasted row ${e.line - 1}: ${e.message}`);
      await onSaved(result.version, `Pasted ${result.valid} rows as version ${result.version.number}` +
        (result.error_count ? `; ${result.error_count} not saved:` : "."), errors);
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
        const row = { id: r.key, key: r.key, index: r.index, deleted: false,
                      original: { variables: r.variables, expected: r.expected, metadata: r.metadata },
                      current: { variables: { ...r.variables }, expected: r.expected } };
        rows.set(row.id, row);
        saved.append(render(row));
      }
      next = page.next;
      more.textContent = next === null ? (rows.size ? "" : "No rows yet.") : "Loading more…";
    } catch (err) {
      more.textContent = `Could not load rows: ${err.message}`;
      next = null;
    } finally {
      loading = false;
    }
    const rect = more.getBoundingClientRect();
    if (next !== null && rect.top < window.innerHeight) loadPage();
  }
  new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) loadPage(); }).observe(more);

  if (canEdit) {
    // A paste of several cells (tabs or lines) into the grid imports them; one cell's text pastes as text.
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
      rows = new Map(); undo = []; next = version ? 0 : null;
      saved.replaceChildren(); added.replaceChildren();
      header();
      more.textContent = version ? "Loading…" : "No rows yet: add a row, or paste or import some.";
      status();
      loadPage();
    },
    addRow, addColumn, undo: undoLast, save, paste, changed,
    discard() { this.load(info); },
  };
}
