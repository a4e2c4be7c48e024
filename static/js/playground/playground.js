// The playground page: edit a conversation (system, turns, last user message),
// run it with streaming, compare variants side by side, save versions, keep a
// draft (per prompt in this browser; the scratch playground's on the server).

import { api, pageConfig, showAlert } from "./api.js";
import { loadBody, uploadBody } from "./bodies.js";
import { ComparePanel } from "./compare.js";
import { Draft, ServerDraft } from "./draft.js";
import { HighlightedEditor, malformedIn, render, variablesIn } from "./editor.js";
import { formatOfVersion, formatRequest, rawTurns, readFormat, schemaToSave, showFormat, toolChoiceToSave,
         toolsToSave } from "./format.js";
import { MessagesEditor } from "./messages.js";
import { Params } from "./params.js";
import { structuredResult, toolCallsResult } from "./result.js";
import { BranchPicker } from "./branches.js";
import { RunsPanel } from "./runs.js";
import { describeRunError, streamChat, tokensPerSecond } from "./stream.js";
import { VariablesPanel } from "./variables.js";
import { offerTestCase, setUpTestCases } from "../evals/save_case.js";

const cfg = pageConfig();
const scratch = !cfg.prompt;
const $ = (id) => document.getElementById(id);
const draft = scratch ? new ServerDraft(api) : new Draft(cfg.prompt.id);
let base = null; // the saved version being edited (null before the first save)
let baseState = null; // its fields, to tell whether the editor is dirty
let running = null; // AbortController of the run in progress

const onEdit = () => { syncVariables(); scheduleDraft(); };
const system = new HighlightedEditor($("system-input"), onEdit);
const turns = new MessagesEditor($("turns"), onEdit);
const body = new HighlightedEditor($("body-input"), onEdit);
const vars = new VariablesPanel($("vars"), scheduleDraft);
const params = new Params(cfg, scheduleDraft);

function texts() { return [system.value, ...turns.texts(), body.value]; }

function syncVariables(defaults = null) {
  const used = variablesIn(...texts());
  vars.sync(used, defaults);
  const declared = base ? Object.keys(base.variables || {}) : [];
  vars.warn({ malformed: malformedIn(...texts()), unused: declared.filter((n) => !used.includes(n)) });
}

function state() {
  return { base: base && base.id, system: system.value, turns: turns.raw(), body: body.value, ...params.get(),
           variables: vars.values(), message: $("commit-message")?.value || "", ...readFormat() };
}

const CONTENT = ["system", "turns", "body", "model", "temperature", "max_tokens", "top_p", "seed", "stop",
                 "variables", "response_format", "tools", "tool_choice"];
function sameContent(a, b) {
  // A variable without a saved default is null saved and "" typed.
  const values = (v) => Object.fromEntries(Object.entries(v || {}).map(([k, x]) => [k, x ?? ""]));
  const pick = (s) => JSON.stringify([...CONTENT.map((k) => (k === "variables" ? values(s[k]) : s[k] ?? null)),
                                      s.response_format === "json_schema" ? s.response_schema : null]);
  return Boolean(a && b) && pick(a) === pick(b);
}

let draftTimer = 0;
function scheduleDraft() {
  clearTimeout(draftTimer);
  draftTimer = setTimeout(async () => {
    const now = state();
    const dirty = !sameContent(now, baseState);
    $("dirty-badge").hidden = !dirty || (scratch && !hasContent(now));
    if (!dirty && !now.message) { draft.clear(); note(""); return; }
    const where = scratch ? "Scratch kept for you" : "Draft saved in this browser";
    note((await draft.save(now)) ? where : "Too large for a draft: save a version to keep it");
    $("discard-draft").hidden = false;
  }, 300);
}

function hasContent(s) { return Boolean(s.system.trim() || s.body.trim() || s.turns.length); }

function note(text) { $("draft-note").textContent = text; }

function apply(s) {
  system.value = s.system || "";
  turns.set(s.turns || []);
  body.value = s.body || "";
  params.set(s);
  showFormat(s);
  syncVariables(s.variables || {});
  if ($("commit-message")) $("commit-message").value = s.message || "";
}

let branchShown; // the base whose branches the picker lists
function showBase() {
  if (!scratch && branchShown !== (base && base.id)) {
    branchShown = base && base.id;
    branches.show(base).catch(() => { $("branch-select").hidden = true; });
  }
  $("version-badge").textContent = scratch ? "scratch" : base ? `v${base.number}` : "unsaved";
  $("version-badge").title = base ? `Editing version ${base.number}; saving makes a child of it` : "";
  const log = $("generations-link");
  if (log) {
    log.hidden = !base;
    if (base) log.href = `/prompts/${cfg.prompt.id}/versions/${base.id}/generations/`;
  }
  document.dispatchEvent(new CustomEvent("playground:version",
    { detail: base && { id: base.id, number: base.number } }));
}

function versionFields(v, text) {
  return { system: v.system, turns: rawTurns(v.messages), body: text, model: v.model, temperature: v.temperature,
           max_tokens: v.max_tokens, top_p: v.top_p, seed: v.seed, stop: v.stop, variables: v.variables,
           ...formatOfVersion(v) };
}

async function loadBase() {
  if (!cfg.versionId) { baseState = null; return; }
  base = cfg.version && cfg.version.id === cfg.versionId ? cfg.version
    : await api(`${cfg.apiBase}/versions/${cfg.versionId}`);
  const large = base.body === null && base.body_size > cfg.lazyBodyBytes;
  $("large-body").hidden = !large;
  if (large) $("large-body-status").textContent = `Loading a ${(base.body_size / 1048576).toFixed(1)} MB body…`;
  const text = await loadBody(base, { lazyBytes: cfg.lazyBodyBytes,
    onProgress: (f) => { $("large-body-progress").value = f; } });
  $("large-body").hidden = true;
  baseState = versionFields(base, text);
  params.ensureModel(base.model);
}

// The editors stay read-only until the version (or run) is in them: nothing typed
// meanwhile is overwritten by it.
async function start() {
  system.setReadOnly(true);
  body.setReadOnly(true);
  const listed = runs.load(); // beside the editors' loading, not after it
  try {
    await openPage();
  } finally {
    system.setReadOnly(false);
    body.setReadOnly(false);
  }
  await listed;
  performance.mark("playground:ready"); // bench/playground_page.py: the editors are writable
}

async function openPage() {
  showBase();
  try {
    await loadBase();
  } catch (err) {
    showAlert($("save-error"), `Could not load this version: ${err.message} Reload the page to try again.`);
  }
  showBase();
  const saved = await draft.load();
  if (saved && (saved.base || null) === (base && base.id) && !sameContent(saved, baseState)) {
    apply(saved);
    note(scratch ? "Your scratch, as you left it" : "Restored your unsaved draft");
    $("discard-draft").hidden = false;
    $("dirty-badge").hidden = scratch && !hasContent(saved);
  } else if (baseState) {
    apply({ ...baseState, message: "" });
  } else {
    syncVariables();
  }
  if (cfg.runId) {
    try {
      await restoreRun(await api(`/api/runs/${cfg.runId}`));
    } catch (err) {
      showAlert($("run-error"), `Could not open the run: ${err.message}`);
    }
  }
  // ?generation=<id> (the generations log's "Open in playground"): its variables, on the version open here.
  const generation = new URLSearchParams(location.search).get("generation");
  if (generation) {
    try {
      const g = await api(`/api/generations/${encodeURIComponent(generation)}`);
      syncVariables(g.variables || {});
      note("Variables of a production generation: run it on this version, or another");
    } catch (err) {
      showAlert($("run-error"), `Could not open the generation: ${err.message}`);
    }
  }
}

// ---- Run history --------------------------------------------------------
// A stored run back in the editor: its version (loaded as the base), its texts
// (a draft's own, else the version's), variables and parameters, and its output.
async function restoreRun(run) {
  if (run.version && (!base || base.id !== run.version)) {
    cfg.versionId = run.version;
    await loadBase();
    history.replaceState(null, "", `?v=${run.version}`);
    showBase();
  }
  const p = run.params, rf = p.response_format;
  const from = run.draft ? { ...run.draft, turns: rawTurns(run.draft.messages) } : baseState || {};
  apply({ system: from.system, turns: from.turns, body: from.body, model: p.model, temperature: p.temperature,
          max_tokens: p.max_tokens, top_p: p.top_p, seed: p.seed, stop: p.stop, variables: run.variables,
          message: "", tools: p.tools ? JSON.stringify(p.tools, null, 2) : "", tool_choice: p.tool_choice || "auto",
          response_format: rf ? rf.type : "text",
          response_schema: rf && rf.json_schema ? JSON.stringify(rf.json_schema.schema, null, 2) : "" });
  out.classList.toggle("empty", !run.output);
  out.textContent = run.output;
  setStat("stat-ttft", run.ttft_ms === null ? "–" : `${run.ttft_ms} ms`);
  setStat("stat-tokens", String(run.completion_tokens));
  setStat("stat-tps", "–");
  setStat("stat-finish", `run of ${new Date(run.created_at).toLocaleString()}: ${run.status}`);
  scheduleDraft();
}
const runs = new RunsPanel(cfg, { onRestore: restoreRun });
const branches = new BranchPicker(cfg);

// ---- Save -------------------------------------------------------------
// The version create fields of an editor state; throws when a JSON field does not parse.
function versionPayload(s, messages) {
  return { model: s.model, system: s.system, messages, temperature: s.temperature, max_tokens: s.max_tokens,
    top_p: s.top_p, seed: s.seed, stop: s.stop, response_schema: schemaToSave(s), tools: toolsToSave(s),
    tool_choice: toolChoiceToSave(s),
    variables: Object.fromEntries(Object.entries(s.variables).map(([k, v]) => [k, v === "" ? null : v])) };
}

async function save() {
  if (!$("save-form")) return; // read-only: no Save panel
  const s = state();
  const btn = $("save-btn");
  showAlert($("save-error"), "");
  showAlert($("save-ok"), "");
  btn.disabled = true;
  try {
    const payload = { ...versionPayload(s, turns.get()), message: s.message };
    if (scratch) {
      const made = await api("/api/playground/save", { method: "POST",
        body: { title: $("prompt-title").value, version: { ...payload, body: s.body } } });
      location.assign(`/prompts/${made.prompt.id}/?v=${made.version.id}`);
      return;
    }
    payload.parent = base ? base.id : null;
    payload.branch = $("save-branch").value.trim();
    if (new TextEncoder().encode(s.body).length > cfg.uploadThreshold) {
      $("upload").hidden = false;
      payload.body_upload = await uploadBody(cfg.apiBase, s.body, (f) => { $("upload-progress").value = f; });
    } else {
      payload.body = s.body;
    }
    const created = await api(`${cfg.apiBase}/versions`, { method: "POST", body: payload });
    saved(created, s);
    showAlert($("save-ok"), `Saved version ${created.number}.`);
  } catch (err) {
    // The editor and the draft keep every character; only the message changes.
    draft.save(s);
    const where = err.field ? ` (field: ${err.field})` : "";
    showAlert($("save-error"), `Not saved: ${err.message}${where} Your text is kept here and in a draft.`);
  } finally {
    btn.disabled = false;
    if (!scratch) $("upload").hidden = true;
  }
}

// The editor shows the saved version as the server keeps it (same text: the caret stays).
function saved(created, s) {
  base = created;
  baseState = versionFields(created, s.body);
  apply({ ...baseState, message: "" });
  draft.clear();
  note("");
  $("discard-draft").hidden = true;
  $("dirty-badge").hidden = true;
  $("commit-message").value = "";
  if ($("save-branch")) $("save-branch").value = "";
  history.replaceState(null, "", `?v=${created.id}`);
  showBase();
  compare.versionsCache = null;
}

// ---- Run --------------------------------------------------------------
const out = $("output");
setUpTestCases();
function setStat(id, text) { $(id).textContent = text; }

// The variables' values, or null (and the run pane says which are missing).
function variableValues() {
  const s = vars.values();
  const missing = vars.names().filter((n) => !s[n]);
  showAlert($("run-error"), missing.length ? `Fill in the variables: ${missing.join(", ")}.` : "");
  return missing.length ? null : s;
}

// The sampling fields of a run: only what the editor sets (the server's defaults apply to the rest).
function sampling(s) {
  const given = (k) => (s[k] === null || s[k] === undefined ? {} : { [k]: s[k] });
  return { model: s.model, ...given("temperature"), ...given("top_p"), ...given("max_tokens"), ...given("seed"),
           ...(s.stop && s.stop.length ? { stop: s.stop } : {}) };
}

async function run() {
  if (running) { running.abort(); return; }
  const s = state();
  const values = variableValues();
  if (values === null) return;
  let extra, messages;
  try {
    extra = formatRequest(s);
    messages = turns.get();
  } catch (err) {
    showAlert($("run-error"), err.message);
    return;
  }
  const request = { version: base ? base.id : null, system: s.system, messages, body: s.body, variables: values,
                    ...sampling(s), ...extra };
  // Answers to tool calls continue the rendered conversation on /v1.
  const rendered = [...(s.system.trim() ? [{ role: "system", content: render(s.system, values) }] : []),
    ...messages.map((m) => ({ ...m, content: render(m.content, values) })),
    { role: "user", content: render(s.body, values) }];
  await stream({ s, values, extra, request, messages: rendered, first: true });
}

// One streamed run of a conversation. A run that calls tools offers to answer the
// calls; the answers continue the same conversation (assistant tool_calls, then a
// tool message per call) as another run. The first run goes to the run route,
// which renders the texts itself and keeps the run in the history.
async function stream({ s, values, extra, messages, request = null, first = false }) {
  request = request || { messages, ...sampling(s), ...extra };
  const answer = (calls) => (results) => {
    if (running) return;
    const follow = [...messages, { role: "assistant", content: null, tool_calls: calls },
                    ...calls.map((c, i) => ({ role: "tool", tool_call_id: c.id, content: results[i] }))];
    // A required call was made: the reply to its results may be text.
    const choice = extra.tool_choice === "required" ? "auto" : extra.tool_choice;
    stream({ s, values, extra: { ...extra, tool_choice: choice }, messages: follow });
  };
  showAlert($("run-error"), "");
  const result = $("run-result");
  result.hidden = true;
  result.replaceChildren();

  out.classList.remove("empty");
  const text = document.createTextNode("");
  const cursor = document.createElement("span");
  cursor.className = "cursor";
  out.replaceChildren(text, cursor);
  ["stat-ttft", "stat-tokens", "stat-tps"].forEach((id) => setStat(id, "…"));
  setStat("stat-finish", "");
  running = new AbortController();
  $("run-btn").firstChild.textContent = "Stop ";
  try {
    const stats = await streamChat({ request, signal: running.signal, url: first ? cfg.runUrl : null,
      onToken: (t, st) => {
        text.appendData(t); // appending to one text node: no re-render of the output
        setStat("stat-ttft", `${Math.round(st.ttftMs)} ms`);
        setStat("stat-tokens", String(st.tokens));
        out.scrollTop = out.scrollHeight;
      } });
    const tps = tokensPerSecond(stats);
    setStat("stat-tokens", String((stats.usage && stats.usage.completion_tokens) || stats.tokens));
    setStat("stat-tps", tps ? `${tps.toFixed(1)} tok/s` : "–");
    if (stats.ttftMs === null) setStat("stat-ttft", "–");
    setStat("stat-finish", stats.finish ? `finish: ${stats.finish}` : "");
    if (stats.toolCalls.length) {
      result.replaceChildren(toolCallsResult(stats.toolCalls, extra.tools,
                                             { onAnswer: answer(stats.toolCalls) }));
      result.hidden = false;
    } else if (extra.response_format) {
      result.replaceChildren(structuredResult(text.data, { mode: extra.response_format.type,
        schema: extra.response_format.json_schema && extra.response_format.json_schema.schema,
        finish: stats.finish }));
      result.hidden = false;
    }
    if (text.data) offerTestCase({ variables: values, output: text.data });
  } catch (err) {
    if (err.name === "AbortError") setStat("stat-finish", "stopped");
    else if (err.status === 429) rateLimited(err);
    else showAlert($("run-error"), describeRunError(err));
  } finally {
    cursor.remove();
    running = null;
    if (!$("run-btn").disabled) $("run-btn").firstChild.textContent = "Run ";
    if (!text.data && result.hidden) out.classList.add("empty");
    if (first) runs.load();
  }
}

// A 429 names the wait: count it down and re-enable Run when it is over.
function rateLimited(err) {
  const btn = $("run-btn");
  let left = Math.max(1, Math.ceil(err.retryAfter || 1));
  btn.disabled = true;
  const tick = () => {
    showAlert($("run-error"), `${describeRunError(err)} You can run again in ${left} s.`);
    btn.firstChild.textContent = `Retry in ${left}s `;
    if (left-- <= 0) {
      clearInterval(timer);
      btn.disabled = false;
      btn.firstChild.textContent = "Run ";
      showAlert($("run-error"), "Rate limit window passed: you can run again.");
    }
  };
  const timer = setInterval(tick, 1000);
  tick();
}

// ---- Side by side -------------------------------------------------------
const versionStates = new Map();
const compare = new ComparePanel({
  cfg, catalog: cfg.catalog, base: () => (base ? base.id : null), ran: () => runs.load(), variables: variableValues,
  editorState: () => {
    const s = state();
    return { ...s, messages: turns.get(), format: formatRequest(s) };
  },
  async versions() {
    if (scratch) return [];
    compare.versionsCache ||= (await api(`${cfg.apiBase}/versions?page_size=100`)).results.reverse();
    return compare.versionsCache;
  },
  async versionState(id) {
    if (!versionStates.has(id)) {
      const v = await api(`${cfg.apiBase}/versions/${id}`);
      const f = versionFields(v, await loadBody(v, { lazyBytes: cfg.lazyBodyBytes }));
      versionStates.set(id, { ...f, messages: v.messages, format: formatRequest(f) });
    }
    return versionStates.get(id);
  },
  async save(s) {
    const created = await api(`${cfg.apiBase}/versions`, { method: "POST", body: {
      ...versionPayload(s, s.messages), parent: base ? base.id : null, body: s.body,
      message: `From a side-by-side column (${s.model})` } });
    saved(created, state());
    return created;
  },
});

// ---- Wiring -----------------------------------------------------------
function addMessage() { turns.add({ role: "user", content: "" }, { focus: true }); }
$("run-btn").addEventListener("click", run);
$("add-message").addEventListener("click", addMessage);
$("save-form")?.addEventListener("submit", (e) => { e.preventDefault(); save(); });
$("commit-message")?.addEventListener("input", scheduleDraft);
for (const id of ["response-format", "response-schema", "tools-input", "tool-choice"]) {
  $(id).addEventListener("input", () => { $("schema-row").hidden = $("response-format").value !== "json_schema";
                                          scheduleDraft(); });
}
document.addEventListener("playground:model", (e) => {
  const card = e.detail, missing = ["tools", "response_format"].filter((f) => !card.features.includes(f));
  $("format-unsupported").hidden = !missing.length;
  $("format-unsupported").textContent = missing.length
    ? `${card.id} does not run ${missing.join(" or ").replace("_", " ")}: a run that sets them is refused.` : "";
});
$("discard-draft").addEventListener("click", () => {
  draft.clear();
  if (baseState) apply({ ...baseState, message: "" }); else apply({});
  note(scratch ? "Scratch cleared" : "Draft discarded");
  $("discard-draft").hidden = true;
  $("dirty-badge").hidden = true;
});
document.addEventListener("keydown", (e) => {
  if (!(e.ctrlKey || e.metaKey)) return;
  if (e.key === "Enter") { e.preventDefault(); if (!$("run-btn").disabled) run(); }
  if (e.key === "s" || e.key === "S") { e.preventDefault(); save(); }
  if (e.key === "m" || e.key === "M") { e.preventDefault(); addMessage(); }
});
params.draw({});
start();
