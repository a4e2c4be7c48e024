// static/js/playground/api.js
var ApiError = class extends Error {
  constructor(status2, body2, retryAfter = null) {
    const err = body2 && body2.error || {};
    super(err.message || `The server answered ${status2}.`);
    this.status = status2;
    this.code = err.code || (status2 === 0 ? "network_error" : "http_" + status2);
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
  let body2 = null;
  try {
    body2 = await res.json();
  } catch {
  }
  const retry = res.headers.get("Retry-After");
  return new ApiError(res.status, body2, retry === null ? null : Number(retry));
}
async function api(path, { method = "GET", body: body2, signal } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      signal,
      credentials: "same-origin",
      headers: headers(body2 === void 0 ? {} : { "Content-Type": "application/json" }),
      body: body2 === void 0 ? void 0 : JSON.stringify(body2)
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, { error: { message: "Could not reach the server. Check your connection and try again." } });
  }
  if (!res.ok) throw await errorFrom(res);
  return res.status === 204 ? null : res.json();
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

// static/js/playground/bodies.js
var CHUNK_BYTES = 512 * 1024;
async function loadBody(version, { lazyBytes, onProgress = () => {
} }) {
  if (version.body !== null && version.body !== void 0) return version.body;
  if (version.body_size <= lazyBytes) {
    const res = await fetch(version.body_url, { credentials: "same-origin" });
    if (!res.ok) throw await errorFrom(res);
    return res.text();
  }
  const decoder = new TextDecoder();
  const parts = [];
  for (let start2 = 0; start2 < version.body_size; start2 += CHUNK_BYTES) {
    const end = Math.min(start2 + CHUNK_BYTES, version.body_size) - 1;
    const res = await fetch(version.body_url, {
      credentials: "same-origin",
      headers: { Range: `bytes=${start2}-${end}` }
    });
    if (res.status !== 206 && !res.ok) throw await errorFrom(res);
    parts.push(decoder.decode(new Uint8Array(await res.arrayBuffer()), { stream: true }));
    onProgress((end + 1) / version.body_size);
  }
  parts.push(decoder.decode());
  return parts.join("");
}
async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
var FORBIDDEN = /* @__PURE__ */ new Set(["content-length", "host", "connection"]);
function put(url, target, bytes, onProgress) {
  return new Promise((resolve2, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(target.method || "PUT", url);
    for (const [k, v] of Object.entries(target.headers || {})) {
      if (!FORBIDDEN.has(k.toLowerCase())) xhr.setRequestHeader(k, v);
    }
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => xhr.status < 300 ? resolve2() : reject(new ApiError(xhr.status, safeJson(xhr.responseText)));
    xhr.onerror = () => reject(new ApiError(0, { error: { message: "The upload to the object store failed. Try saving again." } }));
    xhr.send(bytes);
  });
}
function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
async function uploadBody(apiBase, text, onProgress) {
  const bytes = new TextEncoder().encode(text);
  const sha256 = await sha256Hex(bytes);
  const target = await api(`${apiBase}/uploads`, { method: "POST", body: { size: bytes.length } });
  await put(target.url, target, bytes, onProgress);
  return { upload: target.upload, sha256 };
}

// static/js/playground/estimate.js
function describeEstimate(e) {
  const n = e.items.reduce((a, i) => a + i.count, 0);
  const cost = e.cost_usd === null ? "cost not priced" : `at most $${e.cost_usd.toFixed(4)}`;
  const time = e.seconds === null ? "no live worker to time it on" : `about ${e.seconds < 1 ? "<1" : Math.round(e.seconds)} s at the pool's current rate`;
  return `${n} run${n === 1 ? "" : "s"}: ${cost}, ${time}.`;
}

// static/js/playground/stream.js
async function streamChat({ request, signal, onToken, url = null }) {
  const extra = { "Content-Type": "application/json", "Accept": "text/event-stream" };
  const started = performance.now();
  let res;
  try {
    res = await fetch(url || "/v1/chat/completions", {
      method: "POST",
      credentials: "same-origin",
      signal,
      headers: headers(extra),
      body: JSON.stringify(url ? { ...request, stream: true } : { ...request, stream: true, stream_options: { include_usage: true } })
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, { error: { message: "Could not reach the server. Check your connection and run again." } });
  }
  if (!res.ok) throw await errorFrom(res);
  const stats = {
    ttftMs: null,
    tokens: 0,
    finish: null,
    usage: null,
    totalMs: 0,
    toolCalls: [],
    runId: res.headers.get("x-playground-run")
  };
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (; ; ) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") {
          stats.totalMs = performance.now() - started;
          return stats;
        }
        const chunk = JSON.parse(data);
        if (chunk.error) throw new ApiError(502, chunk);
        if (chunk.usage) stats.usage = chunk.usage;
        const choice = chunk.choices && chunk.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) stats.finish = choice.finish_reason;
        for (const part of choice.delta && choice.delta.tool_calls || []) {
          const call = stats.toolCalls[part.index] ||= { id: "", type: "function", function: { name: "", arguments: "" } };
          if (part.id) call.id = part.id;
          if (part.function && part.function.name) call.function.name += part.function.name;
          if (part.function && part.function.arguments) call.function.arguments += part.function.arguments;
        }
        const text = choice.delta && choice.delta.content;
        if (text) {
          if (stats.ttftMs === null) stats.ttftMs = performance.now() - started;
          stats.tokens += 1;
          onToken(text, stats);
        }
      }
    }
  }
  throw new ApiError(502, { error: { message: "The stream ended before the model finished. Run again." } });
}
function tokensPerSecond(stats) {
  const n = completionTokens(stats);
  const genMs = stats.totalMs - (stats.ttftMs || 0);
  if (stats.tokens > 1 && n > 1 && genMs >= 50) return (n - 1) * 1e3 / genMs;
  return n > 0 && stats.totalMs > 0 ? n * 1e3 / stats.totalMs : null;
}
function completionTokens(stats) {
  return stats.usage && stats.usage.completion_tokens || stats.tokens;
}
function describeRunError(err) {
  if (err.status === 429) return "Rate limited: " + err.message;
  if (err.status === 401) return err.message + " Open \u201CAPI key for runs\u201D and paste a key from the API keys page.";
  if (err.status === 0) return err.message;
  return `${err.message} (${err.code})`;
}

// static/js/playground/compare.js
var $ = (id) => document.getElementById(id);
var MAX_COLUMNS = 6;
var ComparePanel = class {
  // host: { cfg, catalog, editorState(), versions(), versionState(id), variables(), save(state), base() }
  constructor(host) {
    this.host = host;
    this.columns = [];
    this.controllers = [];
    $("compare-add").addEventListener("click", () => this.add());
    $("compare-run").addEventListener("click", () => this.runAll());
    this.estimateTimer = 0;
  }
  async add(source = "editor") {
    if (this.columns.length >= MAX_COLUMNS) return;
    const col = { source: el("select", { "aria-label": "Source" }), model: el("select", { "aria-label": "Model" }) };
    col.source.append(new Option("Editor (draft)", "editor"));
    for (const v of await this.host.versions()) col.source.append(new Option(`v${v.number} ${v.message || ""}`.trim(), v.id));
    col.source.value = source;
    for (const card of this.host.catalog) col.model.append(new Option(card.id, card.id));
    col.model.value = this.host.editorState().model;
    col.text = document.createTextNode("");
    col.out = el("pre", { class: "output compact", tabindex: "0", "aria-label": "Column output" }, col.text);
    col.stats = el("div", { class: "stats col-stats" });
    col.error = el("div", { class: "alert err", role: "alert", hidden: true });
    col.saveBtn = el("button", {
      type: "button",
      class: "btn small",
      text: "Save as version",
      hidden: !this.host.cfg.apiBase,
      onclick: () => this.promote(col)
    });
    col.node = el(
      "div",
      { class: "compare-col" },
      el(
        "div",
        { class: "col-head" },
        col.source,
        col.model,
        el("button", {
          type: "button",
          class: "btn small icon",
          text: "\u2715",
          title: "Remove column",
          "aria-label": "Remove column",
          onclick: () => this.remove(col)
        })
      ),
      col.out,
      col.stats,
      col.error,
      col.saveBtn
    );
    const showSave = async () => {
      const own = col.source.value !== "editor" && (await this.host.versionState(col.source.value)).model;
      col.saveBtn.hidden = !this.host.cfg.apiBase || own === col.model.value;
    };
    col.source.addEventListener("input", async () => {
      if (col.source.value !== "editor") col.model.value = (await this.host.versionState(col.source.value)).model;
      showSave();
      this.scheduleEstimate();
    });
    col.model.addEventListener("input", () => {
      showSave();
      this.scheduleEstimate();
    });
    this.columns.push(col);
    $("compare-cols").append(col.node);
    this.layout();
    this.scheduleEstimate();
  }
  remove(col) {
    this.columns = this.columns.filter((c) => c !== col);
    col.node.remove();
    this.layout();
    this.scheduleEstimate();
  }
  layout() {
    $("compare-cols").style.setProperty("--cols", String(Math.max(1, this.columns.length)));
    $("compare-add").disabled = this.columns.length >= MAX_COLUMNS;
    $("compare-run").disabled = !this.columns.length;
    $("compare-empty").hidden = this.columns.length > 0;
  }
  async stateOf(col) {
    const s = col.source.value === "editor" ? this.host.editorState() : await this.host.versionState(col.source.value);
    return { ...s, model: col.model.value };
  }
  scheduleEstimate() {
    clearTimeout(this.estimateTimer);
    this.estimateTimer = setTimeout(() => this.estimate(), 300);
  }
  async estimate() {
    if (!this.columns.length) {
      $("compare-estimate").textContent = "";
      return;
    }
    try {
      const items = [];
      for (const col of this.columns) {
        const s = await this.stateOf(col);
        const messages = [
          ...s.system.trim() ? [{ role: "system", content: s.system }] : [],
          ...s.messages.map((m) => ({ ...m, content: m.content || "" })),
          { role: "user", content: s.body || " " }
        ];
        items.push({ model: s.model, messages, max_tokens: s.max_tokens, count: 1 });
      }
      const e = await api("/api/estimate", { method: "POST", body: { items } });
      $("compare-estimate").textContent = describeEstimate(e);
    } catch (err) {
      $("compare-estimate").textContent = `No estimate: ${err.message}`;
    }
  }
  async runAll() {
    if (this.controllers.length) {
      this.controllers.forEach((c) => c.abort());
      return;
    }
    const variables = this.host.variables();
    if (variables === null) return;
    $("compare-run").firstChild.textContent = "Stop all ";
    const runs2 = this.columns.map(async (col) => {
      const controller = new AbortController();
      this.controllers.push(controller);
      try {
        await this.runColumn(col, await this.stateOf(col), variables, controller.signal);
      } catch (err) {
        showAlert(col.error, err.message);
      } finally {
        this.controllers = this.controllers.filter((c) => c !== controller);
      }
    });
    await Promise.allSettled(runs2);
    $("compare-run").firstChild.textContent = "Run all ";
    this.host.ran();
  }
  async runColumn(col, s, variables, signal) {
    col.text.data = "";
    col.out.classList.add("streaming");
    showAlert(col.error, "");
    col.stats.textContent = "\u2026";
    const request = {
      version: col.source.value === "editor" ? this.host.base() : col.source.value,
      system: s.system,
      messages: s.messages,
      body: s.body,
      variables,
      ...pick(s, ["model", "temperature", "top_p", "max_tokens", "seed"]),
      ...s.stop && s.stop.length ? { stop: s.stop } : {},
      ...s.format
    };
    const started = performance.now();
    try {
      const stats = await streamChat({
        request,
        signal,
        url: this.host.cfg.runUrl,
        onToken: (t) => {
          col.text.appendData(t);
        }
      });
      const card = this.host.catalog.find((c) => c.id === s.model);
      const usage = stats.usage || {};
      const cost = card && card.price && usage.prompt_tokens !== void 0 ? (usage.prompt_tokens * card.price.input + usage.completion_tokens * card.price.output) / 1e6 : null;
      const tps = tokensPerSecond(stats);
      col.stats.replaceChildren(...[
        ["latency", `${Math.round(performance.now() - started)} ms`],
        ["TTFT", stats.ttftMs === null ? "\u2013" : `${Math.round(stats.ttftMs)} ms`],
        ["tokens", `${usage.prompt_tokens ?? "?"} \u2192 ${completionTokens(stats)}`],
        ["speed", tps ? `${tps.toFixed(1)} tok/s` : "\u2013"],
        ["cost", cost === null ? "not priced" : `$${cost.toFixed(6)}`]
      ].map(([k, v]) => el("span", {}, `${k} `, el("b", { text: v }))));
    } catch (err) {
      col.stats.textContent = "";
      showAlert(col.error, err.name === "AbortError" ? "Stopped." : describeRunError(err));
    } finally {
      col.out.classList.remove("streaming");
    }
  }
  async promote(col) {
    try {
      const made = await this.host.save(await this.stateOf(col));
      col.saveBtn.textContent = `Saved as v${made.number}`;
    } catch (err) {
      showAlert(col.error, `Not saved: ${err.message}`);
    }
  }
};
function pick(s, keys) {
  return Object.fromEntries(keys.filter((k) => s[k] !== null && s[k] !== void 0).map((k) => [k, s[k]]));
}

// static/js/playground/draft.js
var MAX_DRAFT_CHARS = 15e5;
var Draft = class {
  constructor(promptId) {
    this.key = `promptyard:draft:${promptId}`;
  }
  load() {
    try {
      return JSON.parse(localStorage.getItem(this.key) || "null");
    } catch {
      return null;
    }
  }
  save(state2) {
    if ((state2.body || "").length + (state2.system || "").length > MAX_DRAFT_CHARS) return false;
    try {
      localStorage.setItem(this.key, JSON.stringify({ ...state2, savedAt: Date.now() }));
      return true;
    } catch {
      return false;
    }
  }
  clear() {
    localStorage.removeItem(this.key);
  }
};
var ServerDraft = class {
  constructor(api2) {
    this.api = api2;
  }
  async load() {
    try {
      const found = await this.api("/api/playground/draft");
      return Object.keys(found.state).length ? found.state : null;
    } catch {
      return null;
    }
  }
  async save(state2) {
    try {
      await this.api("/api/playground/draft", { method: "PUT", body: { state: { ...state2, savedAt: Date.now() } } });
      return true;
    } catch {
      return false;
    }
  }
  async clear() {
    try {
      await this.api("/api/playground/draft", { method: "PUT", body: { state: {} } });
    } catch {
    }
  }
};

// static/js/playground/editor.js
var VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
var HIGHLIGHT_MAX_CHARS = 2e5;
function variablesIn(...texts2) {
  const seen = /* @__PURE__ */ new Set();
  for (const t of texts2) for (const m of t.matchAll(VARIABLE)) seen.add(m[1]);
  return [...seen];
}
var OPENING = /\{\{/g;
var STARTS_VARIABLE = /^\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}/;
function malformedIn(...texts2) {
  const found = [];
  for (const t of texts2) {
    for (const m of t.matchAll(OPENING)) {
      const rest = t.slice(m.index, m.index + 40);
      if (!STARTS_VARIABLE.test(rest) && !(m.index > 0 && t[m.index - 1] === "{")) {
        const close = rest.indexOf("}}");
        found.push((close > 0 ? rest.slice(0, close + 2) : rest).split("\n")[0]);
      }
    }
  }
  return found;
}
function render(text, values) {
  return text.replace(VARIABLE, (_, name) => values[name] ?? "");
}
var HighlightedEditor = class {
  constructor(textarea, onInput) {
    this.textarea = textarea;
    this.wrap = textarea.parentElement;
    this.mirror = this.wrap.querySelector("pre");
    this.known = /* @__PURE__ */ new Set();
    this.frame = 0;
    this.top = 0;
    textarea.addEventListener("input", () => {
      this.schedule();
      onInput();
    });
    textarea.addEventListener("scroll", () => {
      this.top = textarea.scrollTop;
      this.mirror.scrollTop = this.top;
    });
    new ResizeObserver(([entry]) => {
      this.mirror.style.height = `${entry.borderBoxSize[0].blockSize}px`;
      this.mirror.scrollTop = this.top;
    }).observe(textarea);
  }
  get value() {
    return this.textarea.value;
  }
  set value(text) {
    if (text !== this.textarea.value) this.textarea.value = text;
    this.schedule();
  }
  setReadOnly(ro) {
    this.textarea.readOnly = ro;
  }
  // One repaint per animation frame, however fast the user types.
  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.paint();
    });
  }
  paint() {
    const text = this.textarea.value;
    const plain = text.length > HIGHLIGHT_MAX_CHARS;
    this.wrap.classList.toggle("plain", plain);
    if (plain) {
      this.mirror.replaceChildren();
      return;
    }
    const parts = [];
    let last2 = 0;
    for (const m of text.matchAll(VARIABLE)) {
      parts.push(document.createTextNode(text.slice(last2, m.index)));
      const mark = document.createElement("mark");
      mark.textContent = m[0];
      parts.push(mark);
      last2 = m.index + m[0].length;
    }
    parts.push(document.createTextNode(text.slice(last2) + "\n"));
    this.mirror.replaceChildren(...parts);
    if (this.top) this.mirror.scrollTop = this.top;
  }
};

// static/js/playground/format.js
var $2 = (id) => document.getElementById(id);
function parseJsonField(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${err.message}`);
  }
}
function readFormat() {
  return {
    response_format: $2("response-format").value,
    response_schema: $2("response-schema").value,
    tools: $2("tools-input").value,
    tool_choice: $2("tool-choice").value
  };
}
function showFormat(s) {
  $2("response-format").value = s.response_format || "text";
  $2("response-schema").value = s.response_schema || "";
  $2("tools-input").value = s.tools || "";
  $2("tool-choice").value = s.tool_choice || "auto";
  $2("schema-row").hidden = $2("response-format").value !== "json_schema";
}
function toolsText(tools) {
  return tools && tools.length ? JSON.stringify(tools, null, 2) : "";
}
function formatOfVersion(v) {
  return {
    ...v.response_schema ? {
      response_format: "json_schema",
      response_schema: JSON.stringify(v.response_schema, null, 2)
    } : { response_format: "text", response_schema: "" },
    tools: toolsText(v.tools),
    tool_choice: typeof v.tool_choice === "string" ? v.tool_choice : "auto"
  };
}
function schemaToSave(s) {
  if (s.response_format === "json_object") return { type: "object" };
  if (s.response_format !== "json_schema") return null;
  return parseJsonField(s.response_schema, "The response schema");
}
function toolsToSave(s) {
  return (s.tools || "").trim() ? parseJsonField(s.tools, "Tools") : [];
}
function toolChoiceToSave(s) {
  return (s.tools || "").trim() && s.tool_choice && s.tool_choice !== "auto" ? s.tool_choice : null;
}
function formatRequest(s) {
  const out2 = {};
  if (s.response_format === "json_object") out2.response_format = { type: "json_object" };
  if (s.response_format === "json_schema") {
    out2.response_format = { type: "json_schema", json_schema: {
      name: "response",
      strict: true,
      schema: parseJsonField(s.response_schema, "The response schema")
    } };
  }
  if ((s.tools || "").trim()) {
    out2.tools = parseJsonField(s.tools, "Tools");
    out2.tool_choice = s.tool_choice || "auto";
  }
  return out2;
}
function rawTurns(messages) {
  return (messages || []).map((m) => ({
    role: m.role,
    content: m.content || "",
    calls: m.tool_calls ? JSON.stringify(m.tool_calls, null, 2) : "",
    callId: m.tool_call_id || ""
  }));
}

// static/js/playground/messages.js
var ROLES = ["user", "assistant", "tool", "system"];
var MessagesEditor = class {
  constructor(root, onChange) {
    this.root = root;
    this.onChange = onChange;
    this.turns = [];
  }
  texts() {
    return this.turns.map((t) => t.editor.value);
  }
  // The turns as the API takes them; throws naming the turn when tool calls do not parse.
  get() {
    return this.turns.map((t, i) => {
      const out2 = { role: t.role.value, content: t.editor.value };
      if (out2.role === "assistant" && t.calls.value.trim()) {
        try {
          out2.tool_calls = JSON.parse(t.calls.value);
        } catch (err) {
          throw new Error(`Message ${i + 1}: its tool calls are not valid JSON: ${err.message}`);
        }
      }
      if (out2.role === "tool") out2.tool_call_id = t.callId.value;
      return out2;
    });
  }
  // The turns as typed (a draft keeps tool calls that do not parse yet).
  raw() {
    return this.turns.map((t) => ({
      role: t.role.value,
      content: t.editor.value,
      calls: t.calls.value,
      callId: t.callId.value
    }));
  }
  set(messages) {
    if (JSON.stringify(messages || []) === JSON.stringify(this.raw())) return;
    this.turns = [];
    this.root.replaceChildren();
    for (const m of messages || []) this.add(m, { quiet: true });
    this.renumber();
  }
  add(m = { role: "user", content: "" }, { quiet = false, focus = false } = {}) {
    const turn = {};
    const n = this.turns.length + 1;
    turn.role = el(
      "select",
      { "aria-label": `Role of message ${n}`, class: "role-select" },
      ...ROLES.map((r) => new Option(r, r))
    );
    turn.role.value = ROLES.includes(m.role) ? m.role : "user";
    const area = el("textarea", {
      class: "turn",
      spellcheck: "false",
      rows: 3,
      "aria-label": `Content of message ${n}`
    });
    const wrap = el("div", { class: "hl" }, el("pre", { "aria-hidden": "true" }), area);
    turn.calls = el("textarea", {
      class: "json-input",
      rows: 3,
      spellcheck: "false",
      "aria-label": `Tool calls of message ${n}`,
      placeholder: '[{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]'
    });
    turn.calls.value = m.calls ?? (m.tool_calls ? JSON.stringify(m.tool_calls, null, 2) : "");
    turn.callId = el("input", { "aria-label": `Tool call id of message ${n}`, placeholder: "call_1" });
    turn.callId.value = m.callId ?? m.tool_call_id ?? "";
    const callsRow = el(
      "div",
      { class: "turn-extra" },
      el("span", { class: "hint", text: "Tool calls (JSON, optional)" }),
      turn.calls
    );
    const idRow = el("div", { class: "turn-extra" }, el("span", { class: "hint", text: "Answers the call" }), turn.callId);
    const button = (text, label, fn) => el("button", {
      type: "button",
      class: "btn small icon",
      text,
      "aria-label": label,
      title: label,
      onclick: fn
    });
    turn.node = el(
      "div",
      { class: "turn-row" },
      el(
        "div",
        { class: "turn-head" },
        turn.role,
        el(
          "span",
          { class: "turn-tools" },
          button("\u2191", "Move up", () => this.move(turn, -1)),
          button("\u2193", "Move down", () => this.move(turn, 1)),
          button("\u2715", "Remove message", () => this.remove(turn))
        )
      ),
      wrap,
      callsRow,
      idRow
    );
    const showExtra = () => {
      callsRow.hidden = turn.role.value !== "assistant";
      idRow.hidden = turn.role.value !== "tool";
    };
    turn.role.addEventListener("input", () => {
      showExtra();
      this.onChange();
    });
    turn.calls.addEventListener("input", this.onChange);
    turn.callId.addEventListener("input", this.onChange);
    showExtra();
    turn.editor = new HighlightedEditor(area, this.onChange);
    turn.editor.value = m.content ?? "";
    this.turns.push(turn);
    this.root.append(turn.node);
    if (!quiet) {
      this.renumber();
      this.onChange();
    }
    if (focus) area.focus();
    return turn;
  }
  remove(turn) {
    this.turns = this.turns.filter((t) => t !== turn);
    turn.node.remove();
    this.renumber();
    this.onChange();
  }
  move(turn, by) {
    const i = this.turns.indexOf(turn), j = i + by;
    if (j < 0 || j >= this.turns.length) return;
    [this.turns[i], this.turns[j]] = [this.turns[j], this.turns[i]];
    this.root.replaceChildren(...this.turns.map((t) => t.node));
    this.renumber();
    this.onChange();
  }
  renumber() {
    this.turns.forEach((t, i) => {
      t.node.dataset.index = String(i);
      t.role.setAttribute("aria-label", `Role of message ${i + 1}`);
      t.editor.textarea.setAttribute("aria-label", `Content of message ${i + 1}`);
    });
  }
  setReadOnly(ro) {
    for (const t of this.turns) t.editor.setReadOnly(ro);
  }
};

// static/js/playground/params.js
var $3 = (id) => document.getElementById(id);
var domId = (name) => name.replace(/_/g, "-");
var Params = class {
  constructor(cfg2, onChange) {
    this.cards = new Map(cfg2.catalog.map((c) => [c.id, c]));
    this.onChange = onChange;
    this.select = $3("model-select");
    this.select.replaceChildren(...cfg2.catalog.map((c) => new Option(c.id, c.id)));
    this.ensureModel(cfg2.defaultModel);
    this.select.addEventListener("input", () => {
      this.draw(this.get());
      onChange();
    });
    this.draw({});
  }
  card() {
    return this.cards.get(this.select.value) || { parameters: [], features: [], price: null };
  }
  supports(feature) {
    return this.card().features.includes(feature);
  }
  ensureModel(name) {
    if (!name) return;
    if (![...this.select.options].some((o) => o.value === name)) {
      this.select.add(new Option(`${name} (not served now)`, name));
    }
    this.select.value = name;
  }
  // One control per parameter of the model's card, holding `values` (or the defaults).
  draw(values) {
    const rows = this.card().parameters.map((p) => this.control(p, values[p.name]));
    $3("param-controls").replaceChildren(...rows);
    const price = this.card().price;
    $3("model-price").textContent = price ? `$${price.input} / $${price.output} per million input / output tokens` : "Not priced";
    document.dispatchEvent(new CustomEvent("playground:model", { detail: this.card() }));
  }
  control(p, value) {
    const id = domId(p.name);
    const label = el("label", { for: id, text: p.name.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase()) });
    const given = value === void 0 ? p.default : value;
    if (p.type === "number") {
      const input2 = el("input", { type: "range", id, min: p.min, max: p.max, step: p.step });
      const out2 = el("output", { for: id, id: `${id}-out` });
      input2.value = given ?? p.default;
      out2.textContent = input2.value;
      input2.addEventListener("input", () => {
        out2.textContent = input2.value;
        this.onChange();
      });
      return el("div", { class: "full" }, label, el("div", { class: "range-row" }, input2, out2));
    }
    if (p.type === "strings") {
      const input2 = el("input", { id, placeholder: "\\n\\n", "data-max-items": p.max_items });
      input2.value = (given || []).map((x) => x.replace(/\n/g, "\\n")).join(",");
      input2.addEventListener("input", this.onChange);
      label.textContent = "Stop";
      input2.title = `Up to ${p.max_items} sequences, comma separated; \\n is a newline`;
      return el("div", {}, label, input2);
    }
    const input = el("input", {
      type: "number",
      id,
      min: p.min,
      max: p.max,
      step: 1,
      placeholder: p.default === null ? "none" : String(p.default)
    });
    input.value = given ?? "";
    input.addEventListener("input", this.onChange);
    return el("div", {}, label, input);
  }
  get() {
    const out2 = { model: this.select.value };
    for (const p of this.card().parameters) {
      const input = $3(domId(p.name));
      if (!input) continue;
      if (p.type === "strings") {
        out2[p.name] = input.value.split(",").map((s) => s.replace(/\\n/g, "\n")).filter((s) => s.length);
      } else {
        out2[p.name] = input.value === "" ? null : Number(input.value);
      }
    }
    return out2;
  }
  set(s) {
    if (s.model) this.ensureModel(s.model);
    this.draw(s);
  }
};

// static/js/playground/schema.js
var KNOWN = /* @__PURE__ */ new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "prefixItems",
  "enum",
  "const",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "pattern",
  "anyOf",
  "oneOf",
  "allOf",
  "$ref",
  "$defs",
  "definitions",
  "title",
  "description",
  "default",
  "examples",
  "$schema",
  "$id",
  "$comment"
]);
function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}
function hasType(v, t) {
  const actual = typeOf(v);
  return actual === t || t === "number" && actual === "integer";
}
function resolve(root, ref) {
  if (!ref.startsWith("#/")) return null;
  let node = root;
  for (const part of ref.slice(2).split("/")) {
    node = node && node[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node || null;
}
function validate(schema, value) {
  const errors = [];
  const unchecked = /* @__PURE__ */ new Set();
  const walk = (s, v, path, depth) => {
    if (s === true || s === void 0) return;
    if (s === false) {
      errors.push({ path, message: "no value is allowed here" });
      return;
    }
    if (depth > 64) {
      unchecked.add("(nesting deeper than 64)");
      return;
    }
    for (const k of Object.keys(s)) if (!KNOWN.has(k)) unchecked.add(k);
    const fail = (message) => errors.push({ path, message });
    if (s.$ref !== void 0) {
      const target = resolve(schema, s.$ref);
      if (target === null) unchecked.add(`$ref ${s.$ref}`);
      else walk(target, v, path, depth + 1);
    }
    if (s.type !== void 0) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (!types.some((t) => hasType(v, t))) {
        fail(`expected ${types.join(" or ")}, got ${typeOf(v)}`);
        return;
      }
    }
    if (s.enum !== void 0 && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
      fail(`must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}`);
    }
    if (s.const !== void 0 && JSON.stringify(s.const) !== JSON.stringify(v)) {
      fail(`must be ${JSON.stringify(s.const)}`);
    }
    if (typeof v === "number") {
      if (s.minimum !== void 0 && v < s.minimum) fail(`must be >= ${s.minimum}`);
      if (s.maximum !== void 0 && v > s.maximum) fail(`must be <= ${s.maximum}`);
      if (s.exclusiveMinimum !== void 0 && v <= s.exclusiveMinimum) fail(`must be > ${s.exclusiveMinimum}`);
      if (s.exclusiveMaximum !== void 0 && v >= s.exclusiveMaximum) fail(`must be < ${s.exclusiveMaximum}`);
    }
    if (typeof v === "string") {
      const length = [...v].length;
      if (s.minLength !== void 0 && length < s.minLength) fail(`must be at least ${s.minLength} characters`);
      if (s.maxLength !== void 0 && length > s.maxLength) fail(`must be at most ${s.maxLength} characters`);
      if (s.pattern !== void 0) {
        try {
          if (!new RegExp(s.pattern, "u").test(v)) fail(`must match ${s.pattern}`);
        } catch {
          unchecked.add(`pattern ${s.pattern}`);
        }
      }
    }
    if (Array.isArray(v)) {
      if (s.minItems !== void 0 && v.length < s.minItems) fail(`must have at least ${s.minItems} items`);
      if (s.maxItems !== void 0 && v.length > s.maxItems) fail(`must have at most ${s.maxItems} items`);
      const prefix = s.prefixItems || [];
      v.forEach((item, i) => walk(i < prefix.length ? prefix[i] : s.items, item, `${path}/${i}`, depth + 1));
    }
    if (typeOf(v) === "object") {
      for (const name of s.required || []) if (!(name in v)) fail(`missing required property '${name}'`);
      const props = s.properties || {};
      for (const [name, item] of Object.entries(v)) {
        if (name in props) walk(props[name], item, `${path}/${name}`, depth + 1);
        else if (s.additionalProperties === false) fail(`unexpected property '${name}'`);
        else if (typeof s.additionalProperties === "object") {
          walk(s.additionalProperties, item, `${path}/${name}`, depth + 1);
        }
      }
    }
    const passes = (sub) => {
      const before = errors.length;
      walk(sub, v, path, depth + 1);
      const ok = errors.length === before;
      errors.length = before;
      return ok;
    };
    if (s.allOf) s.allOf.forEach((sub) => walk(sub, v, path, depth + 1));
    if (s.anyOf && !s.anyOf.some(passes)) fail("matches none of anyOf");
    if (s.oneOf && s.oneOf.filter(passes).length !== 1) fail("must match exactly one of oneOf");
  };
  walk(schema, value, "", 0);
  return { errors, unchecked: [...unchecked] };
}

// static/js/playground/result.js
function el2(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}
function jsonTree(value, key = null) {
  const label = key === null ? [] : [el2("span", { class: "jt-key" }, key), ": "];
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    const list = el2("ul", {}, ...entries.map(([k, v]) => el2("li", {}, jsonTree(v, k))));
    const details = el2("details", { open: "" }, el2("summary", {}, ...label, el2(
      "span",
      { class: "jt-count" },
      summary
    )), list);
    return details;
  }
  const kind = value === null ? "null" : typeof value;
  return el2("span", { class: "jt-leaf" }, ...label, el2("span", { class: `jt-${kind}` }, JSON.stringify(value)));
}
function status(ok, text) {
  return el2("p", { class: `result-status ${ok ? "ok" : "bad"}`, "data-valid": String(ok) }, text);
}
function checked(schema, value, what) {
  const { errors, unchecked } = validate(schema, value);
  const nodes = [];
  if (errors.length) {
    nodes.push(status(false, `Does not match ${what}: ` + errors.slice(0, 3).map((e) => `${e.path || "(root)"}: ${e.message}`).join("; ")));
  } else {
    nodes.push(status(true, `Valid against ${what}`));
  }
  if (unchecked.length) nodes.push(el2("p", { class: "hint" }, `Not checked here: ${unchecked.join(", ")}.`));
  return nodes;
}
function structuredResult(text, { mode, schema, finish }) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const why = finish === "length" ? " (cut by max tokens)" : "";
    return el2(
      "div",
      { class: "result", id: "parsed" },
      el2("h3", {}, "Parsed object"),
      status(false, `Not valid JSON${why}: ${err.message}`)
    );
  }
  const verdict = mode === "json_schema" ? checked(schema, value, "the response schema") : [isObject(value) ? status(true, "Valid JSON object") : status(false, "Valid JSON, but not an object")];
  return el2(
    "div",
    { class: "result", id: "parsed" },
    el2("h3", {}, "Parsed object"),
    ...verdict,
    el2("div", { class: "json-tree" }, jsonTree(value))
  );
}
function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
function toolCallsResult(calls, tools, { onAnswer } = {}) {
  const byName = Object.fromEntries((tools || []).map((t) => [t.function.name, t.function]));
  const items = calls.map((call) => {
    const { name, arguments: raw } = call.function;
    const head = el2(
      "div",
      { class: "tool-head" },
      el2("code", { class: "tool-name" }, name),
      el2("span", { class: "hint" }, call.id || "")
    );
    let args;
    try {
      args = JSON.parse(raw);
    } catch (err) {
      return el2(
        "li",
        { class: "tool-call" },
        head,
        status(false, `Arguments are not JSON: ${err.message}`),
        el2("pre", {}, raw)
      );
    }
    const fn = byName[name];
    const verdict = fn ? checked(fn.parameters || {}, args, `${name}'s parameters`) : [status(false, `No tool named ${name} was offered`)];
    return el2("li", { class: "tool-call" }, head, ...verdict, el2("div", { class: "json-tree" }, jsonTree(args)));
  });
  const pane = el2(
    "div",
    { class: "result", id: "tool-calls" },
    el2("h3", {}, `Tool calls (${calls.length})`),
    el2("ul", { class: "tool-list" }, ...items)
  );
  if (onAnswer) {
    const answers = calls.map((call, i) => el2("textarea", {
      class: "json-input tool-answer",
      rows: "2",
      id: `tool-answer-${i}`,
      "aria-label": `Result of ${call.function.name}`,
      spellcheck: "false",
      placeholder: `What ${call.function.name} returned (text, often JSON)`
    }));
    answers.forEach((answer, i) => items[i].append(answer));
    const send = el2(
      "button",
      { type: "button", class: "btn small", id: "tool-answer-send" },
      "Send the results to the model"
    );
    send.addEventListener("click", () => onAnswer(answers.map((a) => a.value)));
    pane.append(send);
  }
  return pane;
}

// static/js/playground/branches.js
var $4 = (id) => document.getElementById(id);
var BranchPicker = class {
  constructor(cfg2) {
    this.cfg = cfg2;
    this.select = $4("branch-select");
    this.select?.addEventListener("change", () => {
      if (this.select.value) location.assign(`?v=${this.select.value}`);
    });
  }
  // The base's branch in the badge, then the tips in the picker (off the page's critical path).
  async show(base2) {
    if (!this.select) return;
    $4("branch-badge").textContent = base2 ? base2.branch : "main";
    $4("branch-badge").title = base2 ? `Saving continues branch ${base2.branch} unless you name a new one` : "";
    const input = $4("save-branch");
    if (input) input.placeholder = base2 ? `${base2.branch} (continue)` : "main";
    if (!base2) {
      this.select.hidden = true;
      return;
    }
    const heads = (await api(`${this.cfg.apiBase}/heads?page_size=100`)).results;
    const seen = /* @__PURE__ */ new Map();
    for (const h of heads) seen.set(h.branch, (seen.get(h.branch) || 0) + 1);
    const options = heads.map((h) => {
      const diverged = seen.get(h.branch) > 1 ? " (diverged)" : "";
      return new Option(`${h.branch} \xB7 v${h.number}${diverged}`, h.id, false, h.id === base2.id);
    });
    if (!heads.some((h) => h.id === base2.id)) {
      options.unshift(new Option(`${base2.branch} \xB7 v${base2.number} (not its tip)`, "", false, true));
    }
    this.select.replaceChildren(...options);
    this.select.hidden = false;
  }
};

// static/js/playground/runs.js
var $5 = (id) => document.getElementById(id);
function when(iso) {
  return new Date(iso).toLocaleString();
}
function versionText(run2) {
  const v = run2.version_number ? `v${run2.version_number}` : "";
  return run2.draft ? v ? `draft from ${v}` : "draft" : v;
}
var RunsPanel = class {
  constructor(cfg2, { onRestore }) {
    this.base = cfg2.runsUrl;
    this.first = cfg2.runs || null;
    this.onRestore = onRestore;
    this.next = null;
    this.caseRun = null;
    this.datasetsLoaded = false;
    let timer = 0;
    $5("runs-search").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.load(), 250);
    });
    $5("runs-search-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.load();
    });
    $5("runs-more").addEventListener("click", () => this.load({ more: true }));
    $5("run-case-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.saveCase();
    });
    $5("run-case-cancel").addEventListener("click", () => {
      $5("run-case-form").hidden = true;
    });
  }
  status(text) {
    $5("runs-status").textContent = text || "";
  }
  async load({ more = false } = {}) {
    const q = $5("runs-search").value.trim();
    const url = more && this.next ? this.next : `${this.base}?page_size=20${q ? `&q=${encodeURIComponent(q)}` : ""}`;
    try {
      const carried = !more && !q && this.first;
      this.first = null;
      const page = carried || await api(url);
      const rows = page.results.map((run2) => this.row(run2));
      if (more) $5("runs-body").append(...rows);
      else $5("runs-body").replaceChildren(...rows);
      this.next = page.next;
      $5("runs-more").hidden = !page.next;
      const empty = !$5("runs-body").children.length;
      $5("runs-empty").hidden = !empty;
      $5("runs-empty").textContent = q ? "No run matches." : "No runs yet: each run here is kept with what it sent.";
      $5("runs-table").hidden = empty;
    } catch (err) {
      this.status(`Could not load the runs: ${err.message}`);
    }
  }
  row(run2) {
    const link = `${location.origin}/runs/${run2.id}/`;
    const actions = el(
      "td",
      { class: "actions" },
      el("button", { type: "button", class: "btn small", text: "Restore", onclick: () => this.restore(run2.id) }),
      " ",
      el("button", { type: "button", class: "btn small", text: "Copy link", onclick: () => this.copy(link) }),
      " ",
      el("button", {
        type: "button",
        class: "btn small",
        text: "Save as test case",
        onclick: () => this.offerCase(run2)
      })
    );
    return el(
      "tr",
      { class: run2.status === "ok" ? "" : "error", "data-run": run2.id },
      el("td", {}, el("a", { href: `/runs/${run2.id}/`, text: when(run2.created_at), title: "Open this run" })),
      el("td", { text: versionText(run2) }),
      el("td", { text: run2.error_code ? `${run2.status} (${run2.error_code})` : run2.status }),
      el("td", { text: run2.latency_ms === null ? "\u2013" : `${run2.latency_ms} ms` }),
      el("td", { class: "first-line", text: run2.first_line, title: run2.first_line }),
      actions
    );
  }
  async restore(id) {
    try {
      await this.onRestore(await api(`/api/runs/${id}`));
      this.status("Restored the run into the editor.");
    } catch (err) {
      this.status(`Could not restore the run: ${err.message}`);
    }
  }
  async copy(link) {
    try {
      await navigator.clipboard.writeText(link);
      this.status(`Link copied: ${link}`);
    } catch {
      this.status(`Copy this link: ${link}`);
    }
  }
  async offerCase(run2) {
    this.caseRun = run2;
    $5("run-case-when").textContent = `of ${when(run2.created_at)}`;
    $5("run-case-form").hidden = false;
    if (this.datasetsLoaded) return;
    try {
      const page = await api("/api/datasets/?page_size=200");
      $5("run-case-dataset").replaceChildren(...page.results.length ? page.results.map((d) => el("option", { value: d.id, text: d.name })) : [el("option", { value: "", text: "No datasets yet (create one under Evals)" })]);
      this.datasetsLoaded = true;
    } catch (err) {
      this.status(`Could not load the datasets: ${err.message}`);
    }
  }
  async saveCase() {
    const id = $5("run-case-dataset").value;
    if (!id || !this.caseRun) return;
    try {
      const version = await api(`/api/runs/${this.caseRun.id}/test-case`, {
        method: "POST",
        body: { dataset_id: id }
      });
      this.status(`Saved as row ${version.row_count} of dataset version ${version.number}.`);
      $5("run-case-form").hidden = true;
    } catch (err) {
      this.status(`Could not save: ${err.message}`);
    }
  }
};

// static/js/playground/variables.js
var VariablesPanel = class {
  constructor(root, onChange) {
    this.root = root;
    this.onChange = onChange;
    this.current = [];
    this.memory = {};
    this.inputs = el("div");
    this.warnings = el("ul", { class: "var-warnings", id: "var-warnings", "aria-live": "polite" });
    root.replaceChildren(this.inputs, this.warnings);
  }
  names() {
    return this.current;
  }
  values() {
    return Object.fromEntries(this.current.map((n) => [n, this.memory[n] ?? ""]));
  }
  sync(names, defaults = null) {
    if (defaults) for (const [k, v] of Object.entries(defaults)) this.memory[k] = v ?? "";
    if (!defaults && names.join("\n") === this.current.join("\n")) return;
    this.current = names;
    if (!names.length) {
      this.inputs.replaceChildren(el(
        "p",
        { class: "hint", id: "vars-empty" },
        "No variables yet. Type {{name}} in the prompt."
      ));
      return;
    }
    this.inputs.replaceChildren(...names.map((name) => {
      const id = `var-${name}`;
      const input = el("textarea", { id, rows: 1, "data-var": name, placeholder: `value of ${name}` });
      input.value = this.memory[name] ?? "";
      input.addEventListener("input", () => {
        this.memory[name] = input.value;
        this.onChange();
      });
      return el("div", { class: "var-row" }, el("label", { for: id, text: name }), input);
    }));
  }
  // malformed: snippets that open no variable; unused: declared names no text uses.
  warn({ malformed = [], unused = [] }) {
    const items = [
      ...malformed.slice(0, 5).map((s) => el(
        "li",
        { class: "warn", "data-kind": "malformed" },
        "Not a variable, sent as written: ",
        el("code", { text: s }),
        " (a name is letters, digits and _, not starting with a digit: {{name}})"
      )),
      ...unused.map((n) => el(
        "li",
        { class: "warn", "data-kind": "unused" },
        el("code", { text: n }),
        " has a saved default but no text uses it."
      ))
    ];
    this.warnings.replaceChildren(...items);
  }
};

// static/js/evals/save_case.js
var $6 = (id) => document.getElementById(id);
var last = null;
var loaded = false;
async function loadDatasets() {
  const page = await api("/api/datasets/?page_size=200");
  $6("case-dataset").replaceChildren(...page.results.length ? page.results.map((d) => el("option", { value: d.id, text: d.name })) : [el("option", { value: "", text: "No datasets yet (create one under Evals)" })]);
  loaded = true;
}
function offerTestCase({ variables, output }) {
  last = { variables, output };
  $6("case-form").hidden = false;
  $6("case-status").textContent = "";
  if (!loaded) loadDatasets().catch((err) => {
    $6("case-status").textContent = err.message;
  });
}
function setUpTestCases() {
  $6("case-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const id = $6("case-dataset").value;
    if (!id || !last) return;
    try {
      const dataset = await api(`/api/datasets/${id}`);
      const version = await api(`/api/datasets/${id}/versions`, { method: "POST", body: {
        base: dataset.latest_version,
        message: "saved from the playground",
        add: [{ variables: last.variables, expected: last.output }]
      } });
      $6("case-status").textContent = `Saved as row ${version.row_count} of version ${version.number}.`;
    } catch (err) {
      $6("case-status").textContent = `Could not save: ${err.message}`;
    }
  });
}

// static/js/playground/playground.js
var cfg = pageConfig();
var scratch = !cfg.prompt;
var $7 = (id) => document.getElementById(id);
var draft = scratch ? new ServerDraft(api) : new Draft(cfg.prompt.id);
var base = null;
var baseState = null;
var running = null;
var onEdit = () => {
  syncVariables();
  scheduleDraft();
};
var system = new HighlightedEditor($7("system-input"), onEdit);
var turns = new MessagesEditor($7("turns"), onEdit);
var body = new HighlightedEditor($7("body-input"), onEdit);
var vars = new VariablesPanel($7("vars"), scheduleDraft);
var params = new Params(cfg, scheduleDraft);
function texts() {
  return [system.value, ...turns.texts(), body.value];
}
function syncVariables(defaults = null) {
  const used = variablesIn(...texts());
  vars.sync(used, defaults);
  const declared = base ? Object.keys(base.variables || {}) : [];
  vars.warn({ malformed: malformedIn(...texts()), unused: declared.filter((n) => !used.includes(n)) });
}
function state() {
  return {
    base: base && base.id,
    system: system.value,
    turns: turns.raw(),
    body: body.value,
    ...params.get(),
    variables: vars.values(),
    message: $7("commit-message")?.value || "",
    ...readFormat()
  };
}
var CONTENT = [
  "system",
  "turns",
  "body",
  "model",
  "temperature",
  "max_tokens",
  "top_p",
  "seed",
  "stop",
  "variables",
  "response_format",
  "tools",
  "tool_choice"
];
function sameContent(a, b) {
  const values = (v) => Object.fromEntries(Object.entries(v || {}).map(([k, x]) => [k, x ?? ""]));
  const pick2 = (s) => JSON.stringify([
    ...CONTENT.map((k) => k === "variables" ? values(s[k]) : s[k] ?? null),
    s.response_format === "json_schema" ? s.response_schema : null
  ]);
  return Boolean(a && b) && pick2(a) === pick2(b);
}
var draftTimer = 0;
function scheduleDraft() {
  clearTimeout(draftTimer);
  draftTimer = setTimeout(async () => {
    const now = state();
    const dirty = !sameContent(now, baseState);
    $7("dirty-badge").hidden = !dirty || scratch && !hasContent(now);
    if (!dirty && !now.message) {
      draft.clear();
      note("");
      return;
    }
    const where = scratch ? "Scratch kept for you" : "Draft saved in this browser";
    note(await draft.save(now) ? where : "Too large for a draft: save a version to keep it");
    $7("discard-draft").hidden = false;
  }, 300);
}
function hasContent(s) {
  return Boolean(s.system.trim() || s.body.trim() || s.turns.length);
}
function note(text) {
  $7("draft-note").textContent = text;
}
function apply(s) {
  system.value = s.system || "";
  turns.set(s.turns || []);
  body.value = s.body || "";
  params.set(s);
  showFormat(s);
  syncVariables(s.variables || {});
  if ($7("commit-message")) $7("commit-message").value = s.message || "";
}
var branchShown;
function showBase() {
  if (!scratch && branchShown !== (base && base.id)) {
    branchShown = base && base.id;
    branches.show(base).catch(() => {
      $7("branch-select").hidden = true;
    });
  }
  $7("version-badge").textContent = scratch ? "scratch" : base ? `v${base.number}` : "unsaved";
  $7("version-badge").title = base ? `Editing version ${base.number}; saving makes a child of it` : "";
  const log = $7("generations-link");
  if (log) {
    log.hidden = !base;
    if (base) log.href = `/prompts/${cfg.prompt.id}/versions/${base.id}/generations/`;
  }
  document.dispatchEvent(new CustomEvent(
    "playground:version",
    { detail: base && { id: base.id, number: base.number } }
  ));
}
function versionFields(v, text) {
  return {
    system: v.system,
    turns: rawTurns(v.messages),
    body: text,
    model: v.model,
    temperature: v.temperature,
    max_tokens: v.max_tokens,
    top_p: v.top_p,
    seed: v.seed,
    stop: v.stop,
    variables: v.variables,
    ...formatOfVersion(v)
  };
}
async function loadBase() {
  if (!cfg.versionId) {
    baseState = null;
    return;
  }
  base = cfg.version && cfg.version.id === cfg.versionId ? cfg.version : await api(`${cfg.apiBase}/versions/${cfg.versionId}`);
  const large = base.body === null && base.body_size > cfg.lazyBodyBytes;
  $7("large-body").hidden = !large;
  if (large) $7("large-body-status").textContent = `Loading a ${(base.body_size / 1048576).toFixed(1)} MB body\u2026`;
  const text = await loadBody(base, {
    lazyBytes: cfg.lazyBodyBytes,
    onProgress: (f) => {
      $7("large-body-progress").value = f;
    }
  });
  $7("large-body").hidden = true;
  baseState = versionFields(base, text);
  params.ensureModel(base.model);
}
async function start() {
  system.setReadOnly(true);
  body.setReadOnly(true);
  const listed = runs.load();
  try {
    await openPage();
  } finally {
    system.setReadOnly(false);
    body.setReadOnly(false);
  }
  await listed;
  performance.mark("playground:ready");
}
async function openPage() {
  showBase();
  try {
    await loadBase();
  } catch (err) {
    showAlert($7("save-error"), `Could not load this version: ${err.message} Reload the page to try again.`);
  }
  showBase();
  const saved2 = await draft.load();
  if (saved2 && (saved2.base || null) === (base && base.id) && !sameContent(saved2, baseState)) {
    apply(saved2);
    note(scratch ? "Your scratch, as you left it" : "Restored your unsaved draft");
    $7("discard-draft").hidden = false;
    $7("dirty-badge").hidden = scratch && !hasContent(saved2);
  } else if (baseState) {
    apply({ ...baseState, message: "" });
  } else {
    syncVariables();
  }
  if (cfg.runId) {
    try {
      await restoreRun(await api(`/api/runs/${cfg.runId}`));
    } catch (err) {
      showAlert($7("run-error"), `Could not open the run: ${err.message}`);
    }
  }
  const generation = new URLSearchParams(location.search).get("generation");
  if (generation) {
    try {
      const g = await api(`/api/generations/${encodeURIComponent(generation)}`);
      syncVariables(g.variables || {});
      note("Variables of a production generation: run it on this version, or another");
    } catch (err) {
      showAlert($7("run-error"), `Could not open the generation: ${err.message}`);
    }
  }
}
async function restoreRun(run2) {
  if (run2.version && (!base || base.id !== run2.version)) {
    cfg.versionId = run2.version;
    await loadBase();
    history.replaceState(null, "", `?v=${run2.version}`);
    showBase();
  }
  const p = run2.params, rf = p.response_format;
  const from = run2.draft ? { ...run2.draft, turns: rawTurns(run2.draft.messages) } : baseState || {};
  apply({
    system: from.system,
    turns: from.turns,
    body: from.body,
    model: p.model,
    temperature: p.temperature,
    max_tokens: p.max_tokens,
    top_p: p.top_p,
    seed: p.seed,
    stop: p.stop,
    variables: run2.variables,
    message: "",
    tools: p.tools ? JSON.stringify(p.tools, null, 2) : "",
    tool_choice: p.tool_choice || "auto",
    response_format: rf ? rf.type : "text",
    response_schema: rf && rf.json_schema ? JSON.stringify(rf.json_schema.schema, null, 2) : ""
  });
  out.classList.toggle("empty", !run2.output);
  out.textContent = run2.output;
  setStat("stat-ttft", run2.ttft_ms === null ? "\u2013" : `${run2.ttft_ms} ms`);
  setStat("stat-tokens", String(run2.completion_tokens));
  setStat("stat-tps", "\u2013");
  setStat("stat-finish", `run of ${new Date(run2.created_at).toLocaleString()}: ${run2.status}`);
  scheduleDraft();
}
var runs = new RunsPanel(cfg, { onRestore: restoreRun });
var branches = new BranchPicker(cfg);
function versionPayload(s, messages) {
  return {
    model: s.model,
    system: s.system,
    messages,
    temperature: s.temperature,
    max_tokens: s.max_tokens,
    top_p: s.top_p,
    seed: s.seed,
    stop: s.stop,
    response_schema: schemaToSave(s),
    tools: toolsToSave(s),
    tool_choice: toolChoiceToSave(s),
    variables: Object.fromEntries(Object.entries(s.variables).map(([k, v]) => [k, v === "" ? null : v]))
  };
}
async function save() {
  if (!$7("save-form")) return;
  const s = state();
  const btn = $7("save-btn");
  showAlert($7("save-error"), "");
  showAlert($7("save-ok"), "");
  btn.disabled = true;
  try {
    const payload = { ...versionPayload(s, turns.get()), message: s.message };
    if (scratch) {
      const made = await api("/api/playground/save", {
        method: "POST",
        body: { title: $7("prompt-title").value, version: { ...payload, body: s.body } }
      });
      location.assign(`/prompts/${made.prompt.id}/?v=${made.version.id}`);
      return;
    }
    payload.parent = base ? base.id : null;
    payload.branch = $7("save-branch").value.trim();
    if (new TextEncoder().encode(s.body).length > cfg.uploadThreshold) {
      $7("upload").hidden = false;
      payload.body_upload = await uploadBody(cfg.apiBase, s.body, (f) => {
        $7("upload-progress").value = f;
      });
    } else {
      payload.body = s.body;
    }
    const created = await api(`${cfg.apiBase}/versions`, { method: "POST", body: payload });
    saved(created, s);
    showAlert($7("save-ok"), `Saved version ${created.number}.`);
  } catch (err) {
    draft.save(s);
    const where = err.field ? ` (field: ${err.field})` : "";
    showAlert($7("save-error"), `Not saved: ${err.message}${where} Your text is kept here and in a draft.`);
  } finally {
    btn.disabled = false;
    if (!scratch) $7("upload").hidden = true;
  }
}
function saved(created, s) {
  base = created;
  baseState = versionFields(created, s.body);
  apply({ ...baseState, message: "" });
  draft.clear();
  note("");
  $7("discard-draft").hidden = true;
  $7("dirty-badge").hidden = true;
  $7("commit-message").value = "";
  if ($7("save-branch")) $7("save-branch").value = "";
  history.replaceState(null, "", `?v=${created.id}`);
  showBase();
  compare.versionsCache = null;
}
var out = $7("output");
setUpTestCases();
function setStat(id, text) {
  $7(id).textContent = text;
}
function variableValues() {
  const s = vars.values();
  const missing = vars.names().filter((n) => !s[n]);
  showAlert($7("run-error"), missing.length ? `Fill in the variables: ${missing.join(", ")}.` : "");
  return missing.length ? null : s;
}
function sampling(s) {
  const given = (k) => s[k] === null || s[k] === void 0 ? {} : { [k]: s[k] };
  return {
    model: s.model,
    ...given("temperature"),
    ...given("top_p"),
    ...given("max_tokens"),
    ...given("seed"),
    ...s.stop && s.stop.length ? { stop: s.stop } : {}
  };
}
async function run() {
  if (running) {
    running.abort();
    return;
  }
  const s = state();
  const values = variableValues();
  if (values === null) return;
  let extra, messages;
  try {
    extra = formatRequest(s);
    messages = turns.get();
  } catch (err) {
    showAlert($7("run-error"), err.message);
    return;
  }
  const request = {
    version: base ? base.id : null,
    system: s.system,
    messages,
    body: s.body,
    variables: values,
    ...sampling(s),
    ...extra
  };
  const rendered = [
    ...s.system.trim() ? [{ role: "system", content: render(s.system, values) }] : [],
    ...messages.map((m) => ({ ...m, content: render(m.content, values) })),
    { role: "user", content: render(s.body, values) }
  ];
  await stream({ s, values, extra, request, messages: rendered, first: true });
}
async function stream({ s, values, extra, messages, request = null, first = false }) {
  request = request || { messages, ...sampling(s), ...extra };
  const answer = (calls) => (results) => {
    if (running) return;
    const follow = [
      ...messages,
      { role: "assistant", content: null, tool_calls: calls },
      ...calls.map((c, i) => ({ role: "tool", tool_call_id: c.id, content: results[i] }))
    ];
    const choice = extra.tool_choice === "required" ? "auto" : extra.tool_choice;
    stream({ s, values, extra: { ...extra, tool_choice: choice }, messages: follow });
  };
  showAlert($7("run-error"), "");
  const result = $7("run-result");
  result.hidden = true;
  result.replaceChildren();
  out.classList.remove("empty");
  const text = document.createTextNode("");
  const cursor = document.createElement("span");
  cursor.className = "cursor";
  out.replaceChildren(text, cursor);
  ["stat-ttft", "stat-tokens", "stat-tps"].forEach((id) => setStat(id, "\u2026"));
  setStat("stat-finish", "");
  running = new AbortController();
  $7("run-btn").firstChild.textContent = "Stop ";
  try {
    const stats = await streamChat({
      request,
      signal: running.signal,
      url: first ? cfg.runUrl : null,
      onToken: (t, st) => {
        text.appendData(t);
        setStat("stat-ttft", `${Math.round(st.ttftMs)} ms`);
        setStat("stat-tokens", String(st.tokens));
        out.scrollTop = out.scrollHeight;
      }
    });
    const tps = tokensPerSecond(stats);
    setStat("stat-tokens", String(stats.usage && stats.usage.completion_tokens || stats.tokens));
    setStat("stat-tps", tps ? `${tps.toFixed(1)} tok/s` : "\u2013");
    if (stats.ttftMs === null) setStat("stat-ttft", "\u2013");
    setStat("stat-finish", stats.finish ? `finish: ${stats.finish}` : "");
    if (stats.toolCalls.length) {
      result.replaceChildren(toolCallsResult(
        stats.toolCalls,
        extra.tools,
        { onAnswer: answer(stats.toolCalls) }
      ));
      result.hidden = false;
    } else if (extra.response_format) {
      result.replaceChildren(structuredResult(text.data, {
        mode: extra.response_format.type,
        schema: extra.response_format.json_schema && extra.response_format.json_schema.schema,
        finish: stats.finish
      }));
      result.hidden = false;
    }
    if (text.data) offerTestCase({ variables: values, output: text.data });
  } catch (err) {
    if (err.name === "AbortError") setStat("stat-finish", "stopped");
    else if (err.status === 429) rateLimited(err);
    else showAlert($7("run-error"), describeRunError(err));
  } finally {
    cursor.remove();
    running = null;
    if (!$7("run-btn").disabled) $7("run-btn").firstChild.textContent = "Run ";
    if (!text.data && result.hidden) out.classList.add("empty");
    if (first) runs.load();
  }
}
function rateLimited(err) {
  const btn = $7("run-btn");
  let left = Math.max(1, Math.ceil(err.retryAfter || 1));
  btn.disabled = true;
  const tick = () => {
    showAlert($7("run-error"), `${describeRunError(err)} You can run again in ${left} s.`);
    btn.firstChild.textContent = `Retry in ${left}s `;
    if (left-- <= 0) {
      clearInterval(timer);
      btn.disabled = false;
      btn.firstChild.textContent = "Run ";
      showAlert($7("run-error"), "Rate limit window passed: you can run again.");
    }
  };
  const timer = setInterval(tick, 1e3);
  tick();
}
var versionStates = /* @__PURE__ */ new Map();
var compare = new ComparePanel({
  cfg,
  catalog: cfg.catalog,
  base: () => base ? base.id : null,
  ran: () => runs.load(),
  variables: variableValues,
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
      ...versionPayload(s, s.messages),
      parent: base ? base.id : null,
      body: s.body,
      message: `From a side-by-side column (${s.model})`
    } });
    saved(created, state());
    return created;
  }
});
function addMessage() {
  turns.add({ role: "user", content: "" }, { focus: true });
}
$7("run-btn").addEventListener("click", run);
$7("add-message").addEventListener("click", addMessage);
$7("save-form")?.addEventListener("submit", (e) => {
  e.preventDefault();
  save();
});
$7("commit-message")?.addEventListener("input", scheduleDraft);
for (const id of ["response-format", "response-schema", "tools-input", "tool-choice"]) {
  $7(id).addEventListener("input", () => {
    $7("schema-row").hidden = $7("response-format").value !== "json_schema";
    scheduleDraft();
  });
}
document.addEventListener("playground:model", (e) => {
  const card = e.detail, missing = ["tools", "response_format"].filter((f) => !card.features.includes(f));
  $7("format-unsupported").hidden = !missing.length;
  $7("format-unsupported").textContent = missing.length ? `${card.id} does not run ${missing.join(" or ").replace("_", " ")}: a run that sets them is refused.` : "";
});
$7("discard-draft").addEventListener("click", () => {
  draft.clear();
  if (baseState) apply({ ...baseState, message: "" });
  else apply({});
  note(scratch ? "Scratch cleared" : "Draft discarded");
  $7("discard-draft").hidden = true;
  $7("dirty-badge").hidden = true;
});
document.addEventListener("keydown", (e) => {
  if (!(e.ctrlKey || e.metaKey)) return;
  if (e.key === "Enter") {
    e.preventDefault();
    if (!$7("run-btn").disabled) run();
  }
  if (e.key === "s" || e.key === "S") {
    e.preventDefault();
    save();
  }
  if (e.key === "m" || e.key === "M") {
    e.preventDefault();
    addMessage();
  }
});
params.draw({});
start();
