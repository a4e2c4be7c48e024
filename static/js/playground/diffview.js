// The history page's Compare view of the field-aware diff (GET .../diff/fields):
// the parameters table, each message's text diff side by side (unified line
// diff, or git-style word diff with [-old-]{+new+}), the tools' and response
// schema's JSON changes. Changed sections open, unchanged ones collapsed. Rows
// are appended in batches between frames, so a huge diff never blocks the tab.

import { api, el, errorFrom } from "./api.js";

const BATCH = 400;
const nextFrame = () => new Promise((r) => requestAnimationFrame(() => r()));

function cell(kind, num, ...content) {
  if (kind === "empty") return el("div", { class: "cell empty" });
  return el("div", { class: `cell ${kind}` }, el("span", { class: "ln", text: num ?? "" }), ...content);
}

// Tokens marked as changed between two lines (a small LCS; long lines skip it).
function wordMarks(a, b) {
  const ta = a.match(/\s+|\w+|[^\w\s]/g) || [], tb = b.match(/\s+|\w+|[^\w\s]/g) || [];
  if (ta.length * tb.length > 40000) return [[a], [b]].map(([t]) => [document.createTextNode(t)]);
  const dp = Array.from({ length: ta.length + 1 }, () => new Uint16Array(tb.length + 1));
  for (let i = ta.length - 1; i >= 0; i--) for (let j = tb.length - 1; j >= 0; j--)
    dp[i][j] = ta[i] === tb[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  const left = [], right = [];
  let i = 0, j = 0;
  while (i < ta.length || j < tb.length) {
    if (i < ta.length && j < tb.length && ta[i] === tb[j]) {
      left.push(document.createTextNode(ta[i])); right.push(document.createTextNode(tb[j])); i++; j++;
    } else if (j < tb.length && (i === ta.length || dp[i][j + 1] >= dp[i + 1][j])) {
      right.push(el("ins", { text: tb[j++] }));
    } else {
      left.push(el("del", { text: ta[i++] }));
    }
  }
  return [left, right];
}

// Line mode: rows of [left cell, right cell].
function* lineRows(text) {
  let oldNo = 0, newNo = 0, dels = [], adds = [];
  function* flush() {
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
      const d = dels[k], a = adds[k];
      const [l, r] = d !== undefined && a !== undefined ? wordMarks(d, a) : [[d ?? ""], [a ?? ""]];
      yield [d === undefined ? cell("empty") : cell("del", ++oldNo, ...l),
             a === undefined ? cell("empty") : cell("add", ++newNo, ...r)];
    }
    dels = []; adds = [];
  }
  for (const line of text.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++") || line.startsWith("\\")) continue;
    if (line.startsWith("@@")) {
      yield* flush();
      const m = line.match(/-(\d+),?\d* \+(\d+)/);
      if (m) { oldNo = Number(m[1]) - 1; newNo = Number(m[2]) - 1; }
      yield [cell("hunk", "", line)];
    } else if (line.startsWith("-")) dels.push(line.slice(1));
    else if (line.startsWith("+")) adds.push(line.slice(1));
    else if (line.startsWith(" ")) {
      yield* flush();
      yield [cell("ctx", ++oldNo, line.slice(1)), cell("ctx", ++newNo, line.slice(1))];
    }
  }
  yield* flush();
}

// Word mode: each side keeps its own words, changes marked.
function* wordRows(text) {
  const hunks = text.split(/^(@@.*@@)\n/m).slice(1);
  for (let h = 0; h < hunks.length; h += 2) {
    yield [cell("hunk", "", hunks[h])];
    const sides = [[[]], [[]]]; // side -> lines -> nodes
    for (const part of hunks[h + 1].split(/(\[-[\s\S]*?-\]|\{\+[\s\S]*?\+\})/)) {
      const del = part.startsWith("[-") && part.endsWith("-]"), ins = part.startsWith("{+") && part.endsWith("+}");
      const body = del || ins ? part.slice(2, -2) : part;
      for (const side of del ? [0] : ins ? [1] : [0, 1]) {
        body.split("\n").forEach((piece, k) => {
          if (k > 0) sides[side].push([]);
          if (piece) sides[side].at(-1).push(del ? el("del", { text: piece }) : ins ? el("ins", { text: piece }) : document.createTextNode(piece));
        });
      }
    }
    const [l, r] = sides.map((lines) => (lines.at(-1).length ? lines : lines.slice(0, -1)));
    for (let k = 0; k < Math.max(l.length, r.length); k++) {
      const changed = (nodes) => nodes && nodes.some((n) => n.nodeType === 1);
      yield [l[k] ? cell(changed(l[k]) ? "del" : "ctx", "", ...l[k]) : cell("empty"),
             r[k] ? cell(changed(r[k]) ? "add" : "ctx", "", ...r[k]) : cell("empty")];
    }
  }
}

// Appends the rows of one text diff to `grid`; the number of rows.
async function fillGrid(grid, text, mode) {
  let batch = [], count = 0;
  for (const row of (mode === "word" ? wordRows : lineRows)(text)) {
    batch.push(...row);
    count += 1;
    if (batch.length >= BATCH) { grid.append(...batch); batch = []; await nextFrame(); }
  }
  grid.append(...batch);
  return count;
}

const json = (v) => JSON.stringify(v, null, 2);

function section({ id, title, changed, note, status }, ...content) {
  return el("details", { class: "diff-section", id, open: changed, "data-status": status ?? (changed ? "changed" : "same") },
    el("summary", {}, el("span", { class: "diff-title", text: title }),
      el("span", { class: `diff-badge ${changed ? "changed" : ""}`, text: note })),
    ...content);
}

// A parameter's null is "unset" (the server's default); a variable's is "required".
function shown(row, end) {
  if (!(end in row)) return "not declared";
  const v = row[end];
  if (v === null) return row.field.startsWith("variables.") ? "required (no default)" : "unset";
  return typeof v === "string" ? v : json(v);
}

function fieldTable(diff, titles) {
  const changed = diff.fields.filter((r) => r.changed);
  const table = el("table", { class: "field-diff", "aria-label": "Parameters" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Field" }),
      el("th", { scope: "col", text: titles[0] }), el("th", { scope: "col", text: titles[1] }))),
    el("tbody", {}, ...diff.fields.map((r) => el("tr", { class: r.changed ? "changed" : "", "data-field": r.field },
      el("th", { scope: "row", text: r.field }), el("td", { text: shown(r, "from") }), el("td", { text: shown(r, "to") })))));
  return section({ id: "diff-fields", title: "Model and parameters", changed: changed.length > 0,
                   note: changed.length ? `${changed.length} changed` : "unchanged" }, table);
}

function opsTable(result, titles, label) {
  const value = (op, key) => (key in op ? el("pre", { text: json(op[key]) })
    : `${key}_elided` in op ? el("em", { text: `${op[`${key}_elided`].toLocaleString()} characters, not shown` }) : "—");
  const verb = { add: "added", remove: "removed", replace: "changed" };
  const table = el("table", { class: "json-diff", "aria-label": label },
    el("thead", {}, el("tr", {}, ...["Change", "Path", titles[0], titles[1]].map((t) => el("th", { scope: "col", text: t })))),
    el("tbody", {}, ...result.ops.map((op) => el("tr", { class: `op-${op.op}` },
      el("td", { text: verb[op.op] }), el("td", {}, el("code", { text: op.path || "(all of it)" })),
      el("td", {}, value(op, "old")), el("td", {}, value(op, "value"))))));
  const cut = el("p", { class: "hint", text: "Only part of the changes is shown: they exceed the diff's limits." });
  return result.truncated ? [table, cut] : [table];
}

// An unchanged section shows, once opened, what both versions hold (read from the newer one).
function showUnchanged(box, ctx, read) {
  const body = el("div", {}, el("p", { class: "hint", text: "Loading…" }));
  box.append(body);
  box.addEventListener("toggle", async () => {
    if (!box.open || body.dataset.loaded) return;
    body.dataset.loaded = "true";
    try {
      const value = read(await ctx.version());
      body.replaceChildren(el("p", { class: "hint", text: `The same in ${ctx.titles[0]} and ${ctx.titles[1]}:` }),
        value === null ? el("p", { class: "hint", text: "(too long to show here: open the version)" }) : el("pre", { class: "ro-text", text: value }));
    } catch (err) {
      body.replaceChildren(el("p", { class: "error", text: `Could not load it: ${err.message}` }));
    }
  });
  return box;
}

function jsonSection(id, title, result, ctx, read) {
  const note = result.changed ? `${result.ops.length}${result.truncated ? "+" : ""} change(s)` : "unchanged";
  const box = section({ id, title, changed: result.changed, note });
  const none = (x) => x === null || (Array.isArray(x) && !x.length);
  if (!result.changed) return showUnchanged(box, ctx, (v) => (none(read(v)) ? "(none)" : json(read(v))));
  box.append(...opsTable(result, ctx.titles, title));
  return box;
}

const STATUS = { same: "unchanged", changed: "changed", added: "added", removed: "removed" };

function messageTitle(m, offsets) {
  if (m.kind === "system") return "System";
  if (m.kind === "body") return "User message template (last message)";
  const n = m.to_index !== null ? m.to_index - offsets[1] : m.from_index - offsets[0];
  return `Message ${n + 1} · ${m.role}`;
}

async function messageSection(m, offsets, ctx) {
  const id = m.kind === "turn" ? `diff-turn-${(m.to_index ?? m.from_index)}` : `diff-${m.kind}`;
  const changed = m.status !== "same";
  const box = section({ id, title: messageTitle(m, offsets), changed, note: STATUS[m.status], status: m.status });
  box.classList.add("diff-message");
  if (!changed) {
    return showUnchanged(box, ctx, (v) => m.kind === "system" ? v.system : m.kind === "body" ? v.body
      : v.messages[m.to_index - offsets[1]].content || json(v.messages[m.to_index - offsets[1]]));
  }
  if (m.diff) {
    const grid = el("div", { class: "diff", role: "table", "aria-label": `${messageTitle(m, offsets)}: differences ${ctx.titles.join(" to ")}` });
    box.append(el("div", { class: "diff-head" }, el("div", { text: ctx.titles[0] }), el("div", { text: ctx.titles[1] })), grid);
    if (m.truncated && m.kind === "body") {  // too long to carry inline: the streamed diff of the body
      const note = el("p", { class: "hint", text: "A long diff: loading all of it…" });
      box.append(note);
      const res = await fetch(`${ctx.apiBase}/diff?from=${ctx.from}&to=${ctx.to}&mode=${ctx.mode}&part=body`, { credentials: "same-origin" });
      if (!res.ok) throw await errorFrom(res);
      note.remove();
      await fillGrid(grid, await res.text(), ctx.mode);
    } else {
      await fillGrid(grid, m.diff, ctx.mode);
      if (m.truncated) box.append(el("p", { class: "hint", text: "The rest of this diff is left out: it exceeds the diff's limits." }));
    }
  }
  if (m.other?.changed) box.append(el("p", { class: "hint", text: "Tool calls and ids:" }), ...opsTable(m.other, ctx.titles, "Other fields"));
  return box;
}

function summary(diff, titles) {
  const fields = diff.fields.filter((r) => r.changed).map((r) => r.field);
  const messages = diff.messages.filter((m) => m.status !== "same").length;
  const parts = [
    fields.length ? `${fields.length === 1 ? "1 parameter" : `${fields.length} parameters`} (${fields.join(", ")})` : "",
    messages ? (messages === 1 ? "1 message" : `${messages} messages`) : "",
    diff.tools.changed ? "the tools" : "", diff.response_schema.changed ? "the response schema" : ""].filter(Boolean);
  const text = parts.length ? `${titles[0]} → ${titles[1]} changes ${parts.join(", ")}.` : `${titles[0]} and ${titles[1]} are the same prompt.`;
  return el("p", { class: "diff-summary", id: "diff-summary", role: "status", text });
}

// Fetches and shows the field-aware diff of two versions in `root`.
export async function showVersionDiff(root, { apiBase, from, to, mode, titles }) {
  const diff = await api(`${apiBase}/diff/fields?from=${from}&to=${to}&mode=${mode}`);
  const ms = diff.messages;
  const hasSystem = (end) => ms.some((m) => m.kind === "system" && m[end] !== null) ? 1 : 0;
  const offsets = [hasSystem("from_index"), hasSystem("to_index")];
  let newer = null;  // the newer version, read once an unchanged section is opened
  const ctx = { apiBase, from, to, mode, titles, version: () => (newer ??= api(`${apiBase}/versions/${to}`)) };
  const changed = ms.filter((m) => m.status !== "same").length;
  const messages = section({ id: "diff-messages", title: "Messages", changed: changed > 0,
                             note: changed ? `${changed} of ${ms.length} changed` : "unchanged" });
  root.replaceChildren(summary(diff, titles),
    diff.coarse ? el("p", { class: "hint", text: "Matching ran out of its time budget: changes span more lines than they need to." }) : "",
    fieldTable(diff, titles), messages,
    jsonSection("diff-tools", "Tools", diff.tools, ctx, (v) => v.tools),
    jsonSection("diff-schema", "Response schema", diff.response_schema, ctx, (v) => v.response_schema));
  for (const m of ms) messages.append(await messageSection(m, offsets, ctx));
}
