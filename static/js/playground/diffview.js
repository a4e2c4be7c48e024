// Side-by-side rendering of the diff API's output (unified line diff, or
// git-style word diff with [-old-]{+new+}). Rows are appended in batches
// between frames, so a huge diff never blocks the tab.

import { el } from "./api.js";

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

// `text`: the body's diff; `parts`: [{name, id, text}] of the other parts (system,
// tools), each shown under its name when it changed.
export async function renderDiff(root, text, mode, titles, parts = []) {
  const grid = el("div", { class: "diff", role: "table", "aria-label": `Differences ${titles[0]} to ${titles[1]}` });
  root.replaceChildren(el("div", { class: "diff-head" }, el("div", { text: titles[0] }), el("div", { text: titles[1] })), grid);
  let batch = [], count = 0;
  for (const row of (mode === "word" ? wordRows : lineRows)(text)) {
    batch.push(...row);
    count += 1;
    if (batch.length >= BATCH) { grid.append(...batch); batch = []; await nextFrame(); }
  }
  grid.append(...batch);
  if (!count) root.append(el("p", { class: "hint", text: "These versions have the same body." }));
  for (const part of parts) {
    const rows = [...(mode === "word" ? wordRows : lineRows)(part.text)];
    if (!rows.length) continue;
    root.append(el("h3", { class: "diff-part", text: part.name }),
      el("div", { class: "diff", id: part.id, role: "table", "aria-label": `${part.name}: differences ${titles[0]} to ${titles[1]}` },
        ...rows.flat()));
  }
}
