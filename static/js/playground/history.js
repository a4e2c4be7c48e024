// The history page: version tree, read-only version view, the Labels panel
// (labels.js), side-by-side diffs and output compare.

import { api, apiAll, el, pageConfig, showAlert } from "./api.js";
import { loadBody } from "./bodies.js";
import { showVersionDiff } from "./diffview.js";
import { completionTokens, describeRunError, streamChat, tokensPerSecond } from "./stream.js";
import { labelsPanel } from "./labels.js";
import { drawTree } from "./tree.js";
import { virtualText } from "./virtual.js";

const cfg = pageConfig();
const $ = (id) => document.getElementById(id);
let nodes = [];
let selected = null, compare = null;

const byId = (id) => nodes.find((n) => n.id === id);
const vname = (id) => (byId(id) ? `v${byId(id).number}` : "?");

function fail(err) { showAlert($("hist-error"), `${err.message} Reload the page to try again.`); }

async function refresh() {
  nodes = await apiAll(`${cfg.apiBase}/tree?page_size=200`);
  if (!nodes.length) {
    $("tree").replaceChildren(el("p", { class: "hint body" }, "No versions yet. ",
      el("a", { href: cfg.playgroundUrl, text: "Write and save the first one" }), "."));
    return;
  }
  if (!selected || !byId(selected)) selected = nodes.at(-1).id;
  fillPickers();
  draw();
}

function draw() {
  drawTree($("tree"), nodes, { selected, compare, onSelect: (id, shift) => {
    if (shift) { compare = id; $("diff-from").value = selected; $("diff-to").value = id; }
    else { selected = id; openVersion(id); labels.selectionChanged().catch(fail); }
    draw();
    document.querySelector(`[data-version="${id}"]`).focus();
  } });
}

function fillPickers() {
  for (const [id, pick] of [["diff-from", nodes.at(-2) || nodes.at(-1)], ["diff-to", nodes.at(-1)]]) {
    const keep = $(id).value;
    $(id).replaceChildren(...nodes.map((n) => new Option(`v${n.number}${n.labels.length ? " · " + n.labels.join(", ") : ""} — ${n.message || "no message"}`, n.id)));
    $(id).value = byId(keep) ? keep : pick.id;
  }
}

// ---- One version, read-only ------------------------------------------
let opening = 0; // the latest openVersion: an earlier one answering late must not replace it

async function openVersion(id) {
  const seq = ++opening;
  const view = $("version-view");
  $("edit-from-here").href = `${cfg.playgroundUrl}?v=${id}`;
  view.replaceChildren(el("p", { class: "hint", text: "Loading…" }));
  try {
    const v = await api(`${cfg.apiBase}/versions/${id}`);
    if (seq !== opening) return;
    const params = [["temperature", v.temperature], ["top_p", v.top_p], ["max_tokens", v.max_tokens], ["seed", v.seed]]
      .filter(([, x]) => x !== null).map(([k, x]) => `${k} ${x}`).join(" · ") || "defaults";
    const meta = el("dl", { class: "version-meta" });
    const origin = v.merge_parent ? ` (merge of ${vname(v.merge_parent)} into ${vname(v.parent)})`
      : v.parent ? ` (edit of ${vname(v.parent)})` : " (root)";
    for (const [k, x] of [["Version", `v${v.number}${origin}`],
      ["Message", v.message || "—"], ["Author", v.author || "—"], ["Created", new Date(v.created_at).toLocaleString()],
      ["Model", v.model], ["Parameters", params], ["Size", `${v.body_size.toLocaleString()} bytes`]]) {
      meta.append(el("dt", { text: k }), el("dd", { text: x }));
    }
    meta.append(el("dt", { text: "Production" }), el("dd", {}, el("a", {
      href: `/prompts/${v.prompt}/versions/${v.id}/generations/`, text: "Generations and figures" })));
    const progress = el("progress", { max: 1, value: 0, "aria-label": "Loading the body" });
    view.replaceChildren(el("h3", { text: `Version ${v.number}`, class: "version-title" }), meta,
      el("strong", { text: "System" }), el("pre", { class: "ro-text", text: v.system || "(none)" }),
      ...v.messages.flatMap((m, i) => [
        el("strong", { text: `Message ${i + 1}: ${m.role}${m.tool_call_id ? ` (answers ${m.tool_call_id})` : ""}` }),
        el("pre", { class: "ro-text", text: m.content + (m.tool_calls ? `\ntool calls: ${JSON.stringify(m.tool_calls)}` : "") })]),
      el("strong", { text: "Last user message (template)" }), progress);
    const text = await loadBody(v, { lazyBytes: cfg.lazyBodyBytes, onProgress: (f) => { progress.value = f; } });
    if (seq !== opening) return;
    // Big bodies get the virtualised viewer; small ones a plain block.
    progress.replaceWith(text.length > 100_000 ? virtualText(text) : el("pre", { class: "ro-text", text, tabindex: 0 }));
  } catch (err) {
    if (seq !== opening) return;
    view.replaceChildren(el("p", { class: "error", text: `Could not open this version: ${err.message}` }));
  }
}

// ---- Labels (labels.js); a move redraws the tree's label tags -----------
const labels = labelsPanel({ cfg, selected: () => selected, vname, fail, changed: refresh });

// ---- Diff and output compare -----------------------------------------
async function showDiff() {
  const from = $("diff-from").value, to = $("diff-to").value, mode = $("diff-mode").value;
  const out = $("diff-out");
  out.replaceChildren(el("p", { class: "hint", text: "Computing the diff…" }));
  try {
    await showVersionDiff(out, { apiBase: cfg.apiBase, from, to, mode, titles: [vname(from), vname(to)] });
  } catch (err) {
    out.replaceChildren(el("p", { class: "error", text: `Could not compute the diff: ${err.message}` }));
  }
}

async function runOne(id, outId, statsId) {
  const out = $(outId);
  const text = document.createTextNode("");
  out.replaceChildren(text);
  $(statsId).textContent = "running…";
  // The version's own run route: the server builds the request from the saved version (its defaults).
  const stats = await streamChat({ request: { variables: {} }, url: `${cfg.apiBase}/versions/${id}/run`,
                                   onToken: (t) => text.appendData(t) });
  const tps = tokensPerSecond(stats);
  $(statsId).textContent = `TTFT ${Math.round(stats.ttftMs ?? 0)} ms · ${completionTokens(stats)} tokens${tps ? ` · ${tps.toFixed(1)} tok/s` : ""}`;
}

async function runBoth() {
  const from = $("diff-from").value, to = $("diff-to").value;
  $("compare-out").hidden = false;
  showAlert($("compare-error"), "");
  $("cmp-a-title").textContent = `${vname(from)} output`;
  $("cmp-b-title").textContent = `${vname(to)} output`;
  const results = await Promise.allSettled([runOne(from, "cmp-a", "cmp-a-stats"), runOne(to, "cmp-b", "cmp-b-stats")]);
  const errors = results.filter((r) => r.status === "rejected").map((r) => describeRunError(r.reason));
  showAlert($("compare-error"), errors.join(" "));
}

// ---- Merging two heads ---------------------------------------------------
// "From" is ours (the first parent), "To" is theirs (merged in). Conflicts are
// shown side by side; the merge is saved once every one is resolved.
let merging = null;

function hunkView(part, hunks) {
  const box = el("div", { class: "merge-part" }, el("strong", { text: part === "body" ? "User message template" : "System" }));
  hunks.forEach((h, i) => {
    if (h.kind === "same") { box.append(el("pre", { class: "ro-text merge-same", text: h.text || "(empty)" })); return; }
    const pick = (choice) => { h.choice = choice; renderMerge(); };
    const side = (who, text) => el("div", { class: `merge-side ${h.choice === who ? "chosen" : ""}` },
      el("div", { class: "hint", text: who === "ours" ? `ours (${vname(merging.ours)})` : `theirs (${vname(merging.theirs)})` }),
      el("pre", { class: "ro-text", text: text || "(nothing)" }),
      el("button", { type: "button", class: "btn small", "data-choose": `${part}-${i}-${who}`, text: "Use this" }, ));
    const grid = el("div", { class: "compare-grid merge-conflict", "data-conflict": `${part}-${i}` }, side("ours", h.ours), side("theirs", h.theirs));
    grid.querySelectorAll("button").forEach((b) => b.addEventListener("click", () => pick(b.dataset.choose.split("-")[2])));
    const both = el("button", { type: "button", class: "btn small", text: "Use both (ours, then theirs)" });
    both.addEventListener("click", () => pick("both"));
    box.append(grid, both);
  });
  return box;
}

function resolved(hunks) {
  if (hunks.some((h) => h.kind === "conflict" && !h.choice)) return null;
  return hunks.map((h) => h.kind === "same" ? h.text : h.choice === "both" ? h.ours + h.theirs : h[h.choice]).join("");
}

function renderMerge() {
  const out = $("merge-out");
  const left = [...merging.system.hunks, ...merging.body.hunks].filter((h) => h.kind === "conflict" && !h.choice).length;
  const save = el("button", { type: "button", class: "btn primary", id: "merge-save", text: "Save the merge" });
  save.disabled = left > 0;
  save.addEventListener("click", saveMerge);
  out.replaceChildren(
    el("p", { class: "hint", id: "merge-summary", text: `Merging ${vname(merging.theirs)} into ${vname(merging.ours)} (common ancestor ${vname(merging.base)}): ` +
      (merging.conflicts ? `${merging.conflicts} conflict(s), ${left} left to resolve.` : "no conflicts.") +
      (merging.tools_differing ? ` Both changed the tools: the merge keeps ours (${vname(merging.ours)}).` : "") +
      (merging.messages_differing ? ` Both changed the messages: the merge keeps ours (${vname(merging.ours)}).` : "") }),
    hunkView("system", merging.system.hunks), hunkView("body", merging.body.hunks), save);
}

async function previewMerge() {
  const out = $("merge-out");
  try {
    merging = await api(`${cfg.apiBase}/merge`, { method: "POST", body: { ours: $("diff-from").value, theirs: $("diff-to").value } });
    renderMerge();
  } catch (err) {
    out.replaceChildren(el("p", { class: "error", id: "merge-error", text: `Cannot merge: ${err.message}` }));
  }
}

async function saveMerge() {
  const ours = await api(`${cfg.apiBase}/versions/${merging.ours}`);
  try {
    const made = await api(`${cfg.apiBase}/versions`, { method: "POST", body: {
      parent: merging.ours, merge_parent: merging.theirs, message: merging.message, model: ours.model,
      temperature: ours.temperature, max_tokens: ours.max_tokens, top_p: ours.top_p, seed: ours.seed, stop: ours.stop,
      response_schema: ours.response_schema, tools: merging.tools, tool_choice: ours.tool_choice,
      messages: merging.messages,
      variables: merging.variables,
      system: resolved(merging.system.hunks), body: resolved(merging.body.hunks) } });
    merging = null;
    selected = made.id;
    await refresh();
    openVersion(made.id);
    $("merge-out").replaceChildren(el("p", { class: "hint", id: "merge-done", text: `Saved as v${made.number}.` }));
  } catch (err) {
    $("merge-out").append(el("p", { class: "error", text: `Could not save the merge: ${err.message}` }));
  }
}

$("diff-btn").addEventListener("click", showDiff);
$("compare-run").addEventListener("click", runBoth);
$("merge-btn")?.addEventListener("click", previewMerge);
refresh().then(() => selected && openVersion(selected)).then(labels.refresh).catch(fail);
