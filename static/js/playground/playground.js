// The playground page: edit, run with streaming, save versions, keep a draft.

import { api, pageConfig, showAlert } from "./api.js";
import { loadBody, uploadBody } from "./bodies.js";
import { Draft } from "./draft.js";
import { HighlightedEditor, render, variablesIn } from "./editor.js";
import { Params } from "./params.js";
import { structuredResult, toolCallsResult } from "./result.js";
import { RunsPanel } from "./runs.js";
import { describeRunError, streamChat, tokensPerSecond } from "./stream.js";
import { VariablesPanel } from "./variables.js";
import { offerTestCase, setUpTestCases } from "../evals/save_case.js";

const cfg = pageConfig();
const $ = (id) => document.getElementById(id);
const draft = new Draft(cfg.prompt.id);
let base = null; // the saved version being edited (null before the first save)
let baseState = null; // its fields, to tell whether the editor is dirty
let running = null; // AbortController of the run in progress

const onEdit = () => { vars.sync(variablesIn(system.value, body.value)); scheduleDraft(); };
const system = new HighlightedEditor($("system-input"), onEdit);
const body = new HighlightedEditor($("body-input"), onEdit);
const vars = new VariablesPanel($("vars"), scheduleDraft);
const params = new Params(cfg, scheduleDraft);

function state() {
  return { base: base && base.id, system: system.value, body: body.value, ...params.get(),
           variables: vars.values(), message: $("commit-message")?.value || "", ...format() };
}

// Response format and tools as typed (text: a draft keeps what does not parse yet).
function format() {
  return { response_format: $("response-format").value, response_schema: $("response-schema").value,
           tools: $("tools-input").value, tool_choice: $("tool-choice").value };
}

function showFormat(s) {
  $("response-format").value = s.response_format || "text";
  $("response-schema").value = s.response_schema || "";
  $("tools-input").value = s.tools || "";
  $("tool-choice").value = s.tool_choice || "auto";
  $("schema-row").hidden = $("response-format").value !== "json_schema";
}

// A saved version's tools, as the editor shows them ("" for none).
function toolsText(tools) {
  return tools && tools.length ? JSON.stringify(tools, null, 2) : "";
}

// A saved version keeps a response schema (a JSON object mode is the schema {"type": "object"}).
function formatOfVersion(v) {
  return v.response_schema ? { response_format: "json_schema",
                               response_schema: JSON.stringify(v.response_schema, null, 2) }
    : { response_format: "text", response_schema: "" };
}

function parseJsonField(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${err.message}`);
  }
}

// The schema to save with a version (null: plain text); throws when it does not parse.
function schemaToSave(s) {
  if (s.response_format === "json_object") return { type: "object" };
  if (s.response_format !== "json_schema") return null;
  return parseJsonField(s.response_schema, "The response schema");
}

// The request's response_format / tools / tool_choice; throws when a field does not parse.
function formatRequest(s) {
  const out = {};
  if (s.response_format === "json_object") out.response_format = { type: "json_object" };
  if (s.response_format === "json_schema") {
    out.response_format = { type: "json_schema", json_schema: { name: "response", strict: true,
      schema: parseJsonField(s.response_schema, "The response schema") } };
  }
  if ((s.tools || "").trim()) {
    out.tools = parseJsonField(s.tools, "Tools");
    out.tool_choice = s.tool_choice || "auto";
  }
  return out;
}

function sameContent(a, b) {
  const pick = ({ system: s, body: t, model, temperature, max_tokens, top_p, stop, variables,
                  response_format: f = "text", response_schema: rs = "", tools = "", tool_choice: tc = "auto" }) =>
    JSON.stringify([s, t, model, temperature, max_tokens, top_p, stop, variables, f, f === "json_schema" ? rs : "",
                    tools, tc]);
  return a && b && pick(a) === pick(b);
}

let draftTimer = 0;
function scheduleDraft() {
  clearTimeout(draftTimer);
  draftTimer = setTimeout(() => {
    const now = state();
    if (baseState && sameContent(now, baseState) && !now.message) { draft.clear(); note(""); return; }
    note(draft.save(now) ? "Draft saved in this browser" : "Too large for a local draft: save a version to keep it");
    $("discard-draft").hidden = false;
  }, 300);
}

function note(text) { $("draft-note").textContent = text; }

function apply(s) {
  system.value = s.system || "";
  body.value = s.body || "";
  params.set(s);
  showFormat(s);
  vars.sync(variablesIn(system.value, body.value), s.variables || {});
  if ($("commit-message")) $("commit-message").value = s.message || "";
}

function showBase() {
  $("version-badge").textContent = base ? `v${base.number}` : "unsaved";
  $("version-badge").title = base ? `Editing version ${base.number}; saving makes a child of it` : "";
  // The export dialog (export.js) shows the saved version being edited.
  document.dispatchEvent(new CustomEvent("playground:version",
    { detail: base && { id: base.id, number: base.number } }));
}

async function loadBase() {
  if (!cfg.versionId) { baseState = null; return; }
  base = await api(`${cfg.apiBase}/versions/${cfg.versionId}`);
  const large = base.body === null && base.body_size > cfg.lazyBodyBytes;
  $("large-body").hidden = !large;
  if (large) $("large-body-status").textContent = `Loading a ${(base.body_size / 1048576).toFixed(1)} MB body…`;
  body.setReadOnly(true);
  const text = await loadBody(base, { lazyBytes: cfg.lazyBodyBytes,
    onProgress: (f) => { $("large-body-progress").value = f; } });
  body.setReadOnly(false);
  $("large-body").hidden = true;
  baseState = { system: base.system, body: text, model: base.model, temperature: base.temperature,
                max_tokens: base.max_tokens, top_p: base.top_p, stop: base.stop, variables: base.variables,
                ...formatOfVersion(base), tools: toolsText(base.tools), tool_choice: "auto" };
  params.ensureModel(base.model);
}

// The editors stay read-only until the version (or run) is in them: nothing typed
// meanwhile is overwritten by it.
async function start() {
  system.setReadOnly(true);
  body.setReadOnly(true);
  try {
    await openPage();
  } finally {
    system.setReadOnly(false);
    body.setReadOnly(false);
  }
  runs.load();
}

async function openPage() {
  showBase();
  params.loadModels();
  try {
    await loadBase();
  } catch (err) {
    showAlert($("save-error"), `Could not load this version: ${err.message} Reload the page to try again.`);
  }
  showBase();
  const saved = draft.load();
  if (saved && (saved.base || null) === (base && base.id) && !sameContent(saved, baseState)) {
    apply(saved);
    note("Restored your unsaved draft");
    $("discard-draft").hidden = false;
  } else if (baseState) {
    apply({ ...baseState, message: "" });
  } else {
    vars.sync([]);
  }
  if (cfg.runId) {
    try {
      await restoreRun(await api(`/api/runs/${cfg.runId}`));
    } catch (err) {
      showAlert($("run-error"), `Could not open the run: ${err.message}`);
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
  const texts = run.draft || { system: baseState ? baseState.system : "", body: baseState ? baseState.body : "" };
  apply({ ...texts, model: p.model, temperature: p.temperature, max_tokens: p.max_tokens, top_p: p.top_p,
          stop: p.stop, variables: run.variables, message: "", tools: toolsText(p.tools),
          tool_choice: p.tool_choice || "auto", response_format: rf ? rf.type : "text",
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

// ---- Save -------------------------------------------------------------
async function save() {
  if (!$("save-form")) return; // read-only: no Save panel
  const s = state();
  const btn = $("save-btn");
  showAlert($("save-error"), "");
  showAlert($("save-ok"), "");
  btn.disabled = true;
  try {
    const payload = { parent: base ? base.id : null, message: s.message, model: s.model, system: s.system,
      temperature: s.temperature, max_tokens: s.max_tokens, top_p: s.top_p, stop: s.stop,
      response_schema: schemaToSave(s),
      tools: (s.tools || "").trim() ? parseJsonField(s.tools, "Tools") : [],
      variables: Object.fromEntries(Object.entries(s.variables).map(([k, v]) => [k, v === "" ? null : v])) };
    if (new TextEncoder().encode(s.body).length > cfg.uploadThreshold) {
      $("upload").hidden = false;
      payload.body_upload = await uploadBody(cfg.apiBase, s.body, (f) => { $("upload-progress").value = f; });
    } else {
      payload.body = s.body;
    }
    const created = await api(`${cfg.apiBase}/versions`, { method: "POST", body: payload });
    base = created;
    baseState = { ...s, variables: payload.variables, ...formatOfVersion(created) };
    draft.clear();
    note("");
    $("discard-draft").hidden = true;
    $("commit-message").value = "";
    history.replaceState(null, "", `?v=${created.id}`);
    showBase();
    showAlert($("save-ok"), `Saved version ${created.number}.`);
  } catch (err) {
    // The editor and the local draft keep every character; only the message changes.
    draft.save(s);
    const where = err.field ? ` (field: ${err.field})` : "";
    showAlert($("save-error"), `Not saved: ${err.message}${where} Your text is kept here and in a local draft.`);
  } finally {
    btn.disabled = false;
    $("upload").hidden = true;
  }
}

// ---- Run --------------------------------------------------------------
const out = $("output");
setUpTestCases();
function setStat(id, text) { $(id).textContent = text; }

async function run() {
  if (running) { running.abort(); return; }
  const s = state();
  const values = Object.fromEntries(vars.names().map((n) => [n, s.variables[n] ?? ""]));
  const missing = vars.names().filter((n) => !values[n]);
  showAlert($("run-error"), missing.length ? `Fill in the variables: ${missing.join(", ")}.` : "");
  if (missing.length) return;
  const messages = [];
  if (s.system.trim()) messages.push({ role: "system", content: render(s.system, values) });
  messages.push({ role: "user", content: render(s.body, values) });
  let extra;
  try {
    extra = formatRequest(s);
  } catch (err) {
    showAlert($("run-error"), err.message);
    return;
  }
  await stream({ s, values, extra, messages, first: true });
}

// One streamed run of a conversation. A run that calls tools offers to answer the
// calls; the answers continue the same conversation (assistant tool_calls, then a
// tool message per call) as another run.
// The first run goes to the prompt's run route, which renders the texts itself
// and keeps the run in the history; answers to tool calls go to /v1.
async function stream({ s, values, extra, messages, first = false }) {
  const sampling = { model: s.model, temperature: s.temperature ?? 1, top_p: s.top_p ?? 1,
                     max_tokens: s.max_tokens ?? 256, ...(s.stop.length ? { stop: s.stop } : {}), ...extra };
  const request = first ? { version: base ? base.id : null, system: s.system, body: s.body, variables: values,
                            ...sampling }
    : { messages, ...sampling };
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
    const stats = await streamChat({ request, signal: running.signal, url: first ? `${cfg.apiBase}/run` : null,
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

// ---- Wiring -----------------------------------------------------------
$("run-btn").addEventListener("click", run);
$("save-form")?.addEventListener("submit", (e) => { e.preventDefault(); save(); });
$("commit-message")?.addEventListener("input", scheduleDraft);
for (const id of ["response-format", "response-schema", "tools-input", "tool-choice"]) {
  $(id).addEventListener("input", () => { $("schema-row").hidden = $("response-format").value !== "json_schema";
                                          scheduleDraft(); });
}
$("discard-draft").addEventListener("click", () => {
  draft.clear();
  if (baseState) apply({ ...baseState, message: "" }); else apply({});
  note("Draft discarded");
  $("discard-draft").hidden = true;
});
document.addEventListener("keydown", (e) => {
  if (!(e.ctrlKey || e.metaKey)) return;
  if (e.key === "Enter") { e.preventDefault(); if (!$("run-btn").disabled) run(); }
  if (e.key === "s" || e.key === "S") { e.preventDefault(); save(); }
});
start();
