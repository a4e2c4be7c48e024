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
  for (let start = 0; start < version.body_size; start += CHUNK_BYTES) {
    const end = Math.min(start + CHUNK_BYTES, version.body_size) - 1;
    const res = await fetch(version.body_url, {
      credentials: "same-origin",
      headers: { Range: `bytes=${start}-${end}` }
    });
    if (res.status !== 206 && !res.ok) throw await errorFrom(res);
    parts.push(decoder.decode(new Uint8Array(await res.arrayBuffer()), { stream: true }));
    onProgress((end + 1) / version.body_size);
  }
  parts.push(decoder.decode());
  return parts.join("");
}

// static/js/playground/diffview.js
var BATCH = 400;
var nextFrame = () => new Promise((r) => requestAnimationFrame(() => r()));
function cell(kind, num, ...content) {
  if (kind === "empty") return el("div", { class: "cell empty" });
  return el("div", { class: `cell ${kind}` }, el("span", { class: "ln", text: num ?? "" }), ...content);
}
function wordMarks(a, b) {
  const ta = a.match(/\s+|\w+|[^\w\s]/g) || [], tb = b.match(/\s+|\w+|[^\w\s]/g) || [];
  if (ta.length * tb.length > 4e4) return [[a], [b]].map(([t]) => [document.createTextNode(t)]);
  const dp = Array.from({ length: ta.length + 1 }, () => new Uint16Array(tb.length + 1));
  for (let i2 = ta.length - 1; i2 >= 0; i2--) for (let j2 = tb.length - 1; j2 >= 0; j2--)
    dp[i2][j2] = ta[i2] === tb[j2] ? dp[i2 + 1][j2 + 1] + 1 : Math.max(dp[i2 + 1][j2], dp[i2][j2 + 1]);
  const left = [], right = [];
  let i = 0, j = 0;
  while (i < ta.length || j < tb.length) {
    if (i < ta.length && j < tb.length && ta[i] === tb[j]) {
      left.push(document.createTextNode(ta[i]));
      right.push(document.createTextNode(tb[j]));
      i++;
      j++;
    } else if (j < tb.length && (i === ta.length || dp[i][j + 1] >= dp[i + 1][j])) {
      right.push(el("ins", { text: tb[j++] }));
    } else {
      left.push(el("del", { text: ta[i++] }));
    }
  }
  return [left, right];
}
function* lineRows(text) {
  let oldNo = 0, newNo = 0, dels = [], adds = [];
  function* flush() {
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
      const d = dels[k], a = adds[k];
      const [l, r] = d !== void 0 && a !== void 0 ? wordMarks(d, a) : [[d ?? ""], [a ?? ""]];
      yield [
        d === void 0 ? cell("empty") : cell("del", ++oldNo, ...l),
        a === void 0 ? cell("empty") : cell("add", ++newNo, ...r)
      ];
    }
    dels = [];
    adds = [];
  }
  for (const line of text.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++") || line.startsWith("\\")) continue;
    if (line.startsWith("@@")) {
      yield* flush();
      const m = line.match(/-(\d+),?\d* \+(\d+)/);
      if (m) {
        oldNo = Number(m[1]) - 1;
        newNo = Number(m[2]) - 1;
      }
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
function* wordRows(text) {
  const hunks = text.split(/^(@@.*@@)\n/m).slice(1);
  for (let h = 0; h < hunks.length; h += 2) {
    yield [cell("hunk", "", hunks[h])];
    const sides = [[[]], [[]]];
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
    const [l, r] = sides.map((lines) => lines.at(-1).length ? lines : lines.slice(0, -1));
    for (let k = 0; k < Math.max(l.length, r.length); k++) {
      const changed = (nodes2) => nodes2 && nodes2.some((n) => n.nodeType === 1);
      yield [
        l[k] ? cell(changed(l[k]) ? "del" : "ctx", "", ...l[k]) : cell("empty"),
        r[k] ? cell(changed(r[k]) ? "add" : "ctx", "", ...r[k]) : cell("empty")
      ];
    }
  }
}
async function fillGrid(grid, text, mode) {
  let batch = [], count = 0;
  for (const row of (mode === "word" ? wordRows : lineRows)(text)) {
    batch.push(...row);
    count += 1;
    if (batch.length >= BATCH) {
      grid.append(...batch);
      batch = [];
      await nextFrame();
    }
  }
  grid.append(...batch);
  return count;
}
var json = (v) => JSON.stringify(v, null, 2);
function section({ id, title, changed, note, status }, ...content) {
  return el(
    "details",
    { class: "diff-section", id, open: changed, "data-status": status ?? (changed ? "changed" : "same") },
    el(
      "summary",
      {},
      el("span", { class: "diff-title", text: title }),
      el("span", { class: `diff-badge ${changed ? "changed" : ""}`, text: note })
    ),
    ...content
  );
}
function shown(row, end) {
  if (!(end in row)) return "not declared";
  const v = row[end];
  if (v === null) return row.field.startsWith("variables.") ? "required (no default)" : "unset";
  return typeof v === "string" ? v : json(v);
}
function fieldTable(diff, titles) {
  const changed = diff.fields.filter((r) => r.changed);
  const table = el(
    "table",
    { class: "field-diff", "aria-label": "Parameters" },
    el("thead", {}, el(
      "tr",
      {},
      el("th", { scope: "col", text: "Field" }),
      el("th", { scope: "col", text: titles[0] }),
      el("th", { scope: "col", text: titles[1] })
    )),
    el("tbody", {}, ...diff.fields.map((r) => el(
      "tr",
      { class: r.changed ? "changed" : "", "data-field": r.field },
      el("th", { scope: "row", text: r.field }),
      el("td", { text: shown(r, "from") }),
      el("td", { text: shown(r, "to") })
    )))
  );
  return section({
    id: "diff-fields",
    title: "Model and parameters",
    changed: changed.length > 0,
    note: changed.length ? `${changed.length} changed` : "unchanged"
  }, table);
}
function opsTable(result, titles, label) {
  const value = (op, key) => key in op ? el("pre", { text: json(op[key]) }) : `${key}_elided` in op ? el("em", { text: `${op[`${key}_elided`].toLocaleString()} characters, not shown` }) : "\u2014";
  const verb = { add: "added", remove: "removed", replace: "changed" };
  const table = el(
    "table",
    { class: "json-diff", "aria-label": label },
    el("thead", {}, el("tr", {}, ...["Change", "Path", titles[0], titles[1]].map((t) => el("th", { scope: "col", text: t })))),
    el("tbody", {}, ...result.ops.map((op) => el(
      "tr",
      { class: `op-${op.op}` },
      el("td", { text: verb[op.op] }),
      el("td", {}, el("code", { text: op.path || "(all of it)" })),
      el("td", {}, value(op, "old")),
      el("td", {}, value(op, "value"))
    )))
  );
  const cut = el("p", { class: "hint", text: "Only part of the changes is shown: they exceed the diff's limits." });
  return result.truncated ? [table, cut] : [table];
}
function showUnchanged(box, ctx, read) {
  const body = el("div", {}, el("p", { class: "hint", text: "Loading\u2026" }));
  box.append(body);
  box.addEventListener("toggle", async () => {
    if (!box.open || body.dataset.loaded) return;
    body.dataset.loaded = "true";
    try {
      const value = read(await ctx.version());
      body.replaceChildren(
        el("p", { class: "hint", text: `The same in ${ctx.titles[0]} and ${ctx.titles[1]}:` }),
        value === null ? el("p", { class: "hint", text: "(too long to show here: open the version)" }) : el("pre", { class: "ro-text", text: value })
      );
    } catch (err) {
      body.replaceChildren(el("p", { class: "error", text: `Could not load it: ${err.message}` }));
    }
  });
  return box;
}
function jsonSection(id, title, result, ctx, read) {
  const note = result.changed ? `${result.ops.length}${result.truncated ? "+" : ""} change(s)` : "unchanged";
  const box = section({ id, title, changed: result.changed, note });
  const none = (x) => x === null || Array.isArray(x) && !x.length;
  if (!result.changed) return showUnchanged(box, ctx, (v) => none(read(v)) ? "(none)" : json(read(v)));
  box.append(...opsTable(result, ctx.titles, title));
  return box;
}
var STATUS = { same: "unchanged", changed: "changed", added: "added", removed: "removed" };
function messageTitle(m, offsets) {
  if (m.kind === "system") return "System";
  if (m.kind === "body") return "User message template (last message)";
  const n = m.to_index !== null ? m.to_index - offsets[1] : m.from_index - offsets[0];
  return `Message ${n + 1} \xB7 ${m.role}`;
}
async function messageSection(m, offsets, ctx) {
  const id = m.kind === "turn" ? `diff-turn-${m.to_index ?? m.from_index}` : `diff-${m.kind}`;
  const changed = m.status !== "same";
  const box = section({ id, title: messageTitle(m, offsets), changed, note: STATUS[m.status], status: m.status });
  box.classList.add("diff-message");
  if (!changed) {
    return showUnchanged(box, ctx, (v) => m.kind === "system" ? v.system : m.kind === "body" ? v.body : v.messages[m.to_index - offsets[1]].content || json(v.messages[m.to_index - offsets[1]]));
  }
  if (m.diff) {
    const grid = el("div", { class: "diff", role: "table", "aria-label": `${messageTitle(m, offsets)}: differences ${ctx.titles.join(" to ")}` });
    box.append(el("div", { class: "diff-head" }, el("div", { text: ctx.titles[0] }), el("div", { text: ctx.titles[1] })), grid);
    if (m.truncated && m.kind === "body") {
      const note = el("p", { class: "hint", text: "A long diff: loading all of it\u2026" });
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
    messages ? messages === 1 ? "1 message" : `${messages} messages` : "",
    diff.tools.changed ? "the tools" : "",
    diff.response_schema.changed ? "the response schema" : ""
  ].filter(Boolean);
  const text = parts.length ? `${titles[0]} \u2192 ${titles[1]} changes ${parts.join(", ")}.` : `${titles[0]} and ${titles[1]} are the same prompt.`;
  return el("p", { class: "diff-summary", id: "diff-summary", role: "status", text });
}
async function showVersionDiff(root, { apiBase, from, to, mode, titles }) {
  const diff = await api(`${apiBase}/diff/fields?from=${from}&to=${to}&mode=${mode}`);
  const ms = diff.messages;
  const hasSystem = (end) => ms.some((m) => m.kind === "system" && m[end] !== null) ? 1 : 0;
  const offsets = [hasSystem("from_index"), hasSystem("to_index")];
  let newer = null;
  const ctx = { apiBase, from, to, mode, titles, version: () => newer ??= api(`${apiBase}/versions/${to}`) };
  const changed = ms.filter((m) => m.status !== "same").length;
  const messages = section({
    id: "diff-messages",
    title: "Messages",
    changed: changed > 0,
    note: changed ? `${changed} of ${ms.length} changed` : "unchanged"
  });
  root.replaceChildren(
    summary(diff, titles),
    diff.coarse ? el("p", { class: "hint", text: "Matching ran out of its time budget: changes span more lines than they need to." }) : "",
    fieldTable(diff, titles),
    messages,
    jsonSection("diff-tools", "Tools", diff.tools, ctx, (v) => v.tools),
    jsonSection("diff-schema", "Response schema", diff.response_schema, ctx, (v) => v.response_schema)
  );
  for (const m of ms) messages.append(await messageSection(m, offsets, ctx));
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

// static/js/playground/labels.js
var $ = (id) => document.getElementById(id);
var when = (iso) => iso ? new Date(iso).toLocaleString([], { dateStyle: "short", timeStyle: "short" }) : "\u2014";
var enc = encodeURIComponent;
function labelsPanel(ctx) {
  const { cfg: cfg2 } = ctx;
  const canEdit = cfg2.role === "owner" || cfg2.role === "editor";
  const isOwner = cfg2.role === "owner";
  const labelUrl = (name) => `${cfg2.apiBase}/labels/${enc(name)}`;
  let labels2 = /* @__PURE__ */ new Map();
  let gates = /* @__PURE__ */ new Map();
  let gateLabel = null;
  function say(node, text, ...extra) {
    node.replaceChildren(text, ...extra);
  }
  function refusal(err) {
    return `${err.message} (${err.code})`;
  }
  async function refresh2() {
    const [list, gateList, reviews] = await Promise.all([
      apiAll(`${cfg2.apiBase}/labels`),
      api(`${cfg2.apiBase}/gates`),
      api(`${cfg2.apiBase}/pending-moves?page_size=20`)
    ]);
    labels2 = new Map(list.map((l) => [l.name, l]));
    gates = new Map(gateList.map((g) => [g.label, g]));
    $("label-names").replaceChildren(...[...labels2.keys()].map((n) => el("option", { value: n })));
    renderLabels();
    renderReviews(reviews.results);
    await namedLabelChanged();
  }
  function protectionText(l) {
    return !l.protected ? "open" : l.require_approval ? "needs approval" : "protected";
  }
  function gateText(g) {
    return g ? `${g.dataset_name} \xB7 ${g.evaluator} \xB7 margin ${g.margin}` : "\u2014";
  }
  function protectionPicker(l) {
    const pick = el(
      "select",
      { class: "label-protect", "aria-label": `Protection of ${l.name}` },
      new Option("Open", "none"),
      new Option("Protected", "protected"),
      new Option("Needs approval", "approval")
    );
    pick.value = !l.protected ? "none" : l.require_approval ? "approval" : "protected";
    pick.addEventListener("change", () => act(l.name, `${l.name}: protection changed.`, () => api(`${labelUrl(l.name)}/protect`, { method: "POST", body: {
      protected: pick.value !== "none",
      require_approval: pick.value === "approval"
    } })));
    return pick;
  }
  function actions(l) {
    if (!canEdit) return null;
    const cell2 = el("td", { class: "label-actions" });
    const button = (text, cls, onclick, title) => el("button", { type: "button", class: `btn small ${cls}`, text, title, onclick });
    cell2.append(
      button(
        `Move to ${ctx.vname(ctx.selected())}`,
        "label-move-here",
        () => {
          $("label-name").value = l.name;
          move();
        },
        "Move this label to the version selected in the tree"
      ),
      button(gates.has(l.name) ? "Edit gate" : "Set gate", "label-gate", () => openGate(l.name)),
      button("Delete", "label-delete", () => remove(l))
    );
    return cell2;
  }
  function historyRow(l) {
    const list = el("ol", { class: "label-history" });
    const more = el("details", { class: "label-more" }, el("summary", { text: `History of ${l.name}` }), list);
    more.addEventListener("toggle", async () => {
      if (!more.open) return;
      list.replaceChildren(el("li", { class: "hint", text: "Loading\u2026" }));
      try {
        const moves = (await api(`${labelUrl(l.name)}/history?page_size=50`)).results;
        list.replaceChildren(...moves.map((m) => el(
          "li",
          {},
          `${m.from_version ? ctx.vname(m.from_version) : "created"} \u2192 ${ctx.vname(m.to_version)} \xB7 ${m.kind} \xB7 ${m.actor || "\u2014"} \xB7 ${when(m.created_at)}`
        )));
      } catch (err) {
        list.replaceChildren(el("li", { class: "error", text: err.message }));
      }
    });
    return el("tr", { class: "label-more-row", "data-history": l.name }, el("td", { colspan: 6 }, more));
  }
  function renderLabels() {
    const rows = [...labels2.values()].flatMap((l) => [
      el(
        "tr",
        { "data-label": l.name },
        el("td", {}, el("code", { text: l.name }), l.split ? el("span", { class: "hint", text: " split" }) : ""),
        el("td", { class: "label-version", text: l.split ? l.split.map((v) => `${ctx.vname(v.version)} ${v.weight}%`).join(", ") : ctx.vname(l.version) }),
        el("td", { class: "hint", text: l.moved_at ? `${l.moved_by || "\u2014"}, ${when(l.moved_at)}` : "\u2014" }),
        el("td", { class: "label-protection" }, isOwner ? protectionPicker(l) : protectionText(l)),
        el("td", { class: "label-gate-text", text: gateText(gates.get(l.name)) }),
        actions(l)
      ),
      historyRow(l)
    ]);
    $("labels-table").tBodies[0].replaceChildren(...rows.length ? rows : [el("tr", {}, el("td", { colspan: 6, class: "hint", text: "No labels yet: name one above and move it to a version." }))]);
  }
  async function act(name, done, call) {
    const status = $("label-status");
    try {
      await call();
      await refresh2();
      await ctx.changed();
      say(status, done);
    } catch (err) {
      say(status, `${name}: ${refusal(err)}`);
      if (err.status === 409) await refresh2();
      else renderLabels();
    }
  }
  async function remove(l) {
    if (!window.confirm(`Delete label \u201C${l.name}\u201D? Clients that fetch it get label_not_found.`)) return;
    await act(l.name, `${l.name} deleted.`, () => api(`${labelUrl(l.name)}?expected=${l.version}`, { method: "DELETE" }));
  }
  async function move(kind = "move") {
    const name = $("label-name").value.trim();
    const status = $("label-status");
    if (!name) {
      say(status, "Name the label first.");
      return;
    }
    const current = labels2.get(name)?.version ?? null;
    const run = $("label-eval").value;
    const query = kind === "move" && run ? `?require_eval=${enc(run)}` : "";
    const body = kind === "move" ? { version: ctx.selected(), expected: current } : { expected: current };
    try {
      const label = await api(`${labelUrl(name)}/${kind}${query}`, { method: "POST", body });
      await refresh2();
      await ctx.changed();
      say(status, label.pending ? `${name}: move to ${ctx.vname(label.pending.to_version)} requested; another editor approves it below.` : `${name} \u2192 ${ctx.vname(label.version)} (${kind === "move" ? "moved" : kind + " done"})`);
    } catch (err) {
      if (err.code.startsWith("eval_")) {
        const next = err.code === "eval_required" ? "Pick a passing run, or request a review (its reviewer picks or starts one). " : "";
        say(
          status,
          `Refused by the gate: ${refusal(err)} ${next}`,
          err.details.run_url ? el("a", { href: err.details.run_url, id: "gate-run-link", text: "Open the run" }) : ""
        );
        await loadGate();
        return;
      }
      say(status, `Refused: ${refusal(err)}${err.status === 409 ? " The table now shows where it points." : ""}`);
      if (err.status === 409) {
        await refresh2();
        await ctx.changed();
      }
    }
  }
  async function requestReview() {
    const name = $("label-name").value.trim();
    const status = $("label-status");
    const label = labels2.get(name);
    if (!label) {
      say(status, `No label \u201C${name}\u201D yet: move it once first, then request reviews of its moves.`);
      return;
    }
    try {
      const pending = await api(`${labelUrl(name)}/pending`, { method: "POST", body: {
        version: ctx.selected(),
        expected: label.version,
        note: $("review-note").value.trim()
      } });
      $("review-note").value = "";
      await refresh2();
      say(status, `Review requested: ${name} \u2192 ${ctx.vname(pending.to_version)}. Another editor approves or rejects it below.`);
    } catch (err) {
      say(status, `Could not request the review: ${refusal(err)}`);
    }
  }
  async function runOptions(select, name, version) {
    const runs = await api(`${labelUrl(name)}/gate/runs?version=${version}`);
    select.replaceChildren(
      new Option(runs.length ? "Pick a run\u2026" : `No run of ${ctx.vname(version)} yet`, ""),
      ...runs.map((r) => {
        const option = new Option(`${r.passed ? "\u2713 passes" : "\u2717 " + r.code} \xB7 ${r.name || "run"} by ${r.owner}, ${when(r.created_at)}`, r.id);
        option.title = r.reason;
        return option;
      })
    );
    const passing = runs.find((r) => r.passed);
    if (passing) select.value = passing.id;
    return runs;
  }
  async function followRun(select, p, id) {
    for (let polls = 0; polls < 400 && select.isConnected; polls++) {
      const mine = (await runOptions(select, p.label, p.to_version)).find((r) => r.id === id);
      if (!mine || mine.status === "done" || mine.status === "cancelled") return;
      await new Promise((resolve) => {
        setTimeout(resolve, 1500);
      });
    }
  }
  async function namedLabelChanged() {
    const name = $("label-name").value.trim();
    const gated = gates.has(name);
    $("label-eval-box").hidden = !gated;
    $("label-move").textContent = `Move to ${ctx.vname(ctx.selected())}`;
    $("review-request").disabled = !labels2.has(name);
    if (gated && canEdit) await runOptions($("label-eval"), name, ctx.selected());
    else $("label-eval").replaceChildren();
    await loadGate();
  }
  async function loadGate() {
    const name = $("label-name").value.trim();
    const view = $("gate-view");
    const gate = gates.get(name);
    if (!name || !gate) {
      view.replaceChildren();
      return;
    }
    const decisions = (await api(`${labelUrl(name)}/gate/decisions?page_size=5`)).results;
    view.replaceChildren(
      el("p", { class: "hint", text: `\u201C${name}\u201D moves only behind a passing run over ${gate.dataset_name} (${gate.evaluator}, margin ${gate.margin}).` }),
      el("ul", { id: "gate-decisions" }, ...decisions.map((d) => el(
        "li",
        { class: d.passed ? "ok" : "error" },
        `${d.passed ? "\u2713" : "\u2717"} ${d.code}: ${d.reason} `,
        d.run_url ? el("a", { href: d.run_url, text: "run" }) : ""
      )))
    );
  }
  function decideRow(p) {
    const box = el("div", { class: "review-decide" });
    const error = el("p", { class: "error review-error", role: "alert", hidden: true });
    const reason = el("input", { class: "review-reason", maxlength: 500, placeholder: "reason (optional)", "aria-label": "Reason" });
    const run = el("select", { class: "review-run", id: `review-run-${p.id}` });
    const decide = async (verdict) => {
      try {
        await api(`${labelUrl(p.label)}/pending/${p.id}/${verdict}`, { method: "POST", body: {
          reason: reason.value.trim(),
          ...verdict === "approve" && run.value ? { eval_run: run.value } : {}
        } });
        await refresh2();
        await ctx.changed();
        say($("label-status"), `${p.label}: move to ${ctx.vname(p.to_version)} ${verdict === "approve" ? "approved" : "rejected"}.`);
      } catch (err) {
        showAlert(error, `Not ${verdict === "approve" ? "approved" : "rejected"}: ${refusal(err)}`);
      }
    };
    const gate = gates.get(p.label);
    if (gate) {
      const started = el("span", { class: "hint review-started" });
      const start = el("button", { type: "button", class: "btn small review-start", text: "Start a run", onclick: async () => {
        try {
          const made = await api(`${labelUrl(p.label)}/gate/runs`, { method: "POST", body: { version: p.to_version } });
          showAlert(error, "");
          started.replaceChildren("Run started (", el("a", { href: made.url, text: "open it" }), "); the list updates when it ends.");
          await followRun(run, p, made.id);
        } catch (err) {
          showAlert(error, `Could not start a run: ${refusal(err)}`);
        }
      } });
      const reload = el("button", {
        type: "button",
        class: "btn small",
        text: "\u21BB",
        title: "Reload the runs",
        "aria-label": "Reload the runs",
        onclick: () => runOptions(run, p.label, p.to_version).catch((err) => showAlert(error, err.message))
      });
      box.append(el(
        "div",
        { class: "review-runs" },
        el("label", { for: run.id, text: `Passing run of ${ctx.vname(p.to_version)} over ${gate.dataset_name}` }),
        el("div", { class: "review-line" }, run, reload, start),
        started
      ));
      runOptions(run, p.label, p.to_version).catch((err) => showAlert(error, err.message));
    }
    box.append(
      el(
        "div",
        { class: "review-line" },
        reason,
        el("button", { type: "button", class: "btn small primary review-approve", text: "Approve", onclick: () => decide("approve") }),
        el("button", { type: "button", class: "btn small review-reject", text: "Reject", onclick: () => decide("reject") })
      ),
      error
    );
    return el("tr", { class: "review-decide-row", "data-decide": p.id }, el("td", { colspan: 5 }, box));
  }
  function reviewStatus(p) {
    if (p.status === "pending") return p.requested_by === cfg2.user ? "pending \xB7 awaiting another editor" : "pending";
    return p.status + (p.decided_by ? ` by ${p.decided_by}` : "") + (p.reason ? `: ${p.reason}` : "");
  }
  function renderReviews(reviews) {
    const rows = reviews.flatMap((p) => [
      el(
        "tr",
        { "data-pending": p.id, "data-status": p.status },
        el("td", {}, el("code", { text: p.label })),
        el("td", { text: `${p.from_version ? ctx.vname(p.from_version) : "\u2014"} \u2192 ${ctx.vname(p.to_version)}` }),
        el("td", { class: "review-note", text: p.note || "\u2014" }),
        el("td", { class: "hint", text: `${p.requested_by || "\u2014"}, ${when(p.created_at)}` }),
        el("td", { class: "review-status", text: reviewStatus(p) })
      ),
      ...p.status === "pending" && canEdit && p.requested_by !== cfg2.user ? [decideRow(p)] : []
    ]);
    $("reviews-table").tBodies[0].replaceChildren(...rows.length ? rows : [el("tr", {}, el("td", { colspan: 5, class: "hint", text: "No review requests." }))]);
  }
  async function openGate(name) {
    gateLabel = name;
    const gate = gates.get(name);
    $("gate-title").textContent = `Gate of \u201C${name}\u201D`;
    showAlert($("gate-error"), "");
    $("gate-clear").hidden = !gate;
    const [datasets, evaluators] = await Promise.all([apiAll("/api/datasets/?page_size=100"), api("/api/evals/evaluators")]);
    $("gate-dataset").replaceChildren(...datasets.length ? datasets.map((d) => new Option(d.name, d.id)) : [new Option("No dataset yet: create one under Evaluations", "")]);
    $("gate-evaluators").replaceChildren(...evaluators.map((e) => el("option", { value: e.name })));
    if (gate) {
      $("gate-dataset").value = gate.dataset;
      $("gate-evaluator").value = gate.evaluator;
      $("gate-margin").value = gate.margin;
    }
    $("gate-dialog").showModal();
  }
  async function gateCall(call) {
    try {
      await call();
      $("gate-dialog").close();
      await refresh2();
    } catch (err) {
      showAlert($("gate-error"), refusal(err));
    }
  }
  $("label-form").hidden = !canEdit;
  $("labels-table").tHead.rows[0].lastElementChild.hidden = !canEdit;
  $("labels-role").textContent = canEdit ? "" : `read-only (${cfg2.role})`;
  $("label-form").addEventListener("submit", (e) => {
    e.preventDefault();
    move();
  });
  $("label-undo").addEventListener("click", () => move("undo"));
  $("label-redo").addEventListener("click", () => move("redo"));
  $("review-request").addEventListener("click", requestReview);
  $("label-name").addEventListener("change", () => namedLabelChanged().catch(ctx.fail));
  $("gate-form").addEventListener("submit", (e) => {
    e.preventDefault();
    gateCall(() => api(`${labelUrl(gateLabel)}/gate`, { method: "PUT", body: {
      dataset: $("gate-dataset").value,
      evaluator: $("gate-evaluator").value.trim(),
      margin: Number($("gate-margin").value)
    } }));
  });
  $("gate-clear").addEventListener("click", () => gateCall(() => api(`${labelUrl(gateLabel)}/gate`, { method: "DELETE" })));
  $("gate-close").addEventListener("click", () => $("gate-dialog").close());
  function selectionChanged() {
    renderLabels();
    return namedLabelChanged();
  }
  return { refresh: refresh2, selectionChanged };
}

// static/js/playground/tree.js
var NS = "http://www.w3.org/2000/svg";
var ROW = 34;
var LANE = 22;
var PAD = 18;
function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== void 0) node.textContent = text;
  return node;
}
function layout(nodes2) {
  const byId2 = new Map(nodes2.map((n) => [n.id, n]));
  const lane = /* @__PURE__ */ new Map();
  let lanes = 0;
  for (const n of nodes2) {
    if (!n.parent || !byId2.has(n.parent)) {
      lane.set(n.id, lanes++);
      continue;
    }
    const siblings = byId2.get(n.parent).children;
    lane.set(n.id, siblings[0] === n.id ? lane.get(n.parent) : lanes++);
  }
  return { lane, lanes: Math.max(lanes, 1) };
}
function drawTree(root, nodes2, { selected: selected2, compare: compare2, onSelect }) {
  const { lane, lanes } = layout(nodes2);
  const byId2 = new Map(nodes2.map((n) => [n.id, n]));
  const row = new Map(nodes2.map((n, i) => [n.id, i]));
  const x = (id) => PAD + lane.get(id) * LANE, y = (id) => PAD + row.get(id) * ROW;
  const textX = PAD + lanes * LANE + 4;
  const width = Math.max(320, textX + 360), height = PAD * 2 + (nodes2.length - 1) * ROW;
  const graph = svg("svg", {
    class: "tree",
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "group",
    "aria-label": "Version tree"
  });
  for (const n of nodes2) {
    if (!n.parent || !row.has(n.parent)) continue;
    const [x1, y1, x2, y2] = [x(n.parent), y(n.parent), x(n.id), y(n.id)];
    const d = x1 === x2 ? `M${x1},${y1} L${x2},${y2}` : `M${x1},${y1} C${x1},${y1 + ROW * 0.8} ${x2},${y1 + ROW * 0.2} ${x2},${Math.min(y2, y1 + ROW)} L${x2},${y2}`;
    graph.append(svg("path", { class: "edge", d }));
  }
  for (const n of nodes2) {
    if (!n.merge_parent || !row.has(n.merge_parent)) continue;
    const [x1, y1, x2, y2] = [x(n.merge_parent), y(n.merge_parent), x(n.id), y(n.id)];
    const d = `M${x1},${y1} C${x1},${y2 - ROW * 0.6} ${x2},${y2 - ROW * 0.4} ${x2},${y2}`;
    graph.append(svg("path", { class: "edge merge", d, "data-merge": `${n.merge_parent}>${n.id}` }));
  }
  for (const n of nodes2) {
    const classes = ["node", n.id === selected2 ? "selected" : "", n.id === compare2 ? "compare" : ""].join(" ");
    const label = `Version ${n.number} on ${n.branch}${n.message ? ": " + n.message : ""}${n.labels.length ? ", labels " + n.labels.join(", ") : ""}`;
    const g = svg("g", {
      class: classes,
      tabindex: 0,
      role: "button",
      "aria-label": label,
      "data-version": n.id,
      "data-number": n.number,
      "aria-pressed": n.id === selected2 ? "true" : "false"
    });
    g.append(svg("rect", { class: "hit", x: 0, y: y(n.id) - ROW / 2, width, height: ROW, fill: "transparent" }));
    g.append(
      svg("circle", { class: "ring", cx: x(n.id), cy: y(n.id), r: 10 }),
      svg("circle", { cx: x(n.id), cy: y(n.id), r: 6 })
    );
    let tx = textX;
    g.append(svg("text", { x: tx, y: y(n.id) + 4, "font-weight": 600 }, `v${n.number}`));
    tx += 34;
    for (const name of n.labels) {
      const w = 12 + name.length * 6.6;
      const pill = svg("g", { class: "lbl" });
      pill.append(
        svg("rect", { x: tx, y: y(n.id) - 9, width: w, height: 18, rx: 9 }),
        svg("text", { x: tx + 6, y: y(n.id) + 4 }, name)
      );
      g.append(pill);
      tx += w + 4;
    }
    const parent = n.parent && byId2.get(n.parent);
    if (!parent || parent.branch !== n.branch || !n.children.length) {
      const text = `\u2387 ${n.branch}`;
      g.append(svg("text", { class: "branch", x: tx, y: y(n.id) + 4, "data-branch": n.branch }, text));
      tx += 10 + text.length * 6.6;
    }
    const msg = (n.message || "(no message)").slice(0, 48);
    g.append(svg("text", { class: "msg", x: tx + 2, y: y(n.id) + 4 }, msg));
    g.append(svg("title", {}, label));
    g.addEventListener("click", (e) => onSelect(n.id, e.shiftKey));
    g.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        onSelect(n.id, e.shiftKey);
      }
    });
    graph.append(g);
  }
  root.replaceChildren(graph);
}

// static/js/playground/virtual.js
var LINE_PX = 20;
function virtualText(text) {
  const lines = text.split("\n");
  const box = el("div", { class: "virt", tabindex: 0, role: "region", "aria-label": `Body, ${lines.length} lines` });
  const spacer = el("div", { class: "spacer" });
  spacer.style.height = lines.length * LINE_PX + "px";
  box.append(spacer);
  let frame = 0;
  const paint = () => {
    frame = 0;
    const first = Math.max(0, Math.floor(box.scrollTop / LINE_PX) - 20);
    const last = Math.min(lines.length, first + Math.ceil(box.clientHeight / LINE_PX) + 40);
    const rows = [];
    for (let i = first; i < last; i++) {
      const row = el("div", { class: "line" }, el("span", { class: "ln", text: String(i + 1) }), lines[i].slice(0, 2e3));
      row.style.top = i * LINE_PX + "px";
      rows.push(row);
    }
    spacer.replaceChildren(...rows);
  };
  box.addEventListener("scroll", () => {
    if (!frame) frame = requestAnimationFrame(paint);
  });
  requestAnimationFrame(paint);
  return box;
}

// static/js/playground/history.js
var cfg = pageConfig();
var $2 = (id) => document.getElementById(id);
var nodes = [];
var selected = null;
var compare = null;
var byId = (id) => nodes.find((n) => n.id === id);
var vname = (id) => byId(id) ? `v${byId(id).number}` : "?";
function fail(err) {
  showAlert($2("hist-error"), `${err.message} Reload the page to try again.`);
}
async function refresh() {
  nodes = await apiAll(`${cfg.apiBase}/tree?page_size=200`);
  if (!nodes.length) {
    $2("tree").replaceChildren(el(
      "p",
      { class: "hint body" },
      "No versions yet. ",
      el("a", { href: cfg.playgroundUrl, text: "Write and save the first one" }),
      "."
    ));
    return;
  }
  if (!selected || !byId(selected)) selected = nodes.at(-1).id;
  fillPickers();
  draw();
}
function draw() {
  drawTree($2("tree"), nodes, { selected, compare, onSelect: (id, shift) => {
    if (shift) {
      compare = id;
      $2("diff-from").value = selected;
      $2("diff-to").value = id;
    } else {
      selected = id;
      openVersion(id);
      labels.selectionChanged().catch(fail);
    }
    draw();
    document.querySelector(`[data-version="${id}"]`).focus();
  } });
}
function fillPickers() {
  for (const [id, pick] of [["diff-from", nodes.at(-2) || nodes.at(-1)], ["diff-to", nodes.at(-1)]]) {
    const keep = $2(id).value;
    $2(id).replaceChildren(...nodes.map((n) => new Option(`v${n.number}${n.labels.length ? " \xB7 " + n.labels.join(", ") : ""} \u2014 ${n.message || "no message"}`, n.id)));
    $2(id).value = byId(keep) ? keep : pick.id;
  }
}
var opening = 0;
async function openVersion(id) {
  const seq = ++opening;
  const view = $2("version-view");
  $2("edit-from-here").href = `${cfg.playgroundUrl}?v=${id}`;
  view.replaceChildren(el("p", { class: "hint", text: "Loading\u2026" }));
  try {
    const v = await api(`${cfg.apiBase}/versions/${id}`);
    if (seq !== opening) return;
    const params = [["temperature", v.temperature], ["top_p", v.top_p], ["max_tokens", v.max_tokens], ["seed", v.seed]].filter(([, x]) => x !== null).map(([k, x]) => `${k} ${x}`).join(" \xB7 ") || "defaults";
    const meta = el("dl", { class: "version-meta" });
    const origin = v.merge_parent ? ` (merge of ${vname(v.merge_parent)} into ${vname(v.parent)})` : v.parent ? ` (edit of ${vname(v.parent)})` : " (root)";
    for (const [k, x] of [
      ["Version", `v${v.number}${origin}`],
      ["Message", v.message || "\u2014"],
      ["Author", v.author || "\u2014"],
      ["Created", new Date(v.created_at).toLocaleString()],
      ["Model", v.model],
      ["Parameters", params],
      ["Size", `${v.body_size.toLocaleString()} bytes`]
    ]) {
      meta.append(el("dt", { text: k }), el("dd", { text: x }));
    }
    meta.append(el("dt", { text: "Production" }), el("dd", {}, el("a", {
      href: `/prompts/${v.prompt}/versions/${v.id}/generations/`,
      text: "Generations and figures"
    })));
    const progress = el("progress", { max: 1, value: 0, "aria-label": "Loading the body" });
    view.replaceChildren(
      el("h3", { text: `Version ${v.number}`, class: "version-title" }),
      meta,
      el("strong", { text: "System" }),
      el("pre", { class: "ro-text", text: v.system || "(none)" }),
      ...v.messages.flatMap((m, i) => [
        el("strong", { text: `Message ${i + 1}: ${m.role}${m.tool_call_id ? ` (answers ${m.tool_call_id})` : ""}` }),
        el("pre", { class: "ro-text", text: m.content + (m.tool_calls ? `
tool calls: ${JSON.stringify(m.tool_calls)}` : "") })
      ]),
      el("strong", { text: "Last user message (template)" }),
      progress
    );
    const text = await loadBody(v, { lazyBytes: cfg.lazyBodyBytes, onProgress: (f) => {
      progress.value = f;
    } });
    if (seq !== opening) return;
    progress.replaceWith(text.length > 1e5 ? virtualText(text) : el("pre", { class: "ro-text", text, tabindex: 0 }));
  } catch (err) {
    if (seq !== opening) return;
    view.replaceChildren(el("p", { class: "error", text: `Could not open this version: ${err.message}` }));
  }
}
var labels = labelsPanel({ cfg, selected: () => selected, vname, fail, changed: refresh });
async function showDiff() {
  const from = $2("diff-from").value, to = $2("diff-to").value, mode = $2("diff-mode").value;
  const out = $2("diff-out");
  out.replaceChildren(el("p", { class: "hint", text: "Computing the diff\u2026" }));
  try {
    await showVersionDiff(out, { apiBase: cfg.apiBase, from, to, mode, titles: [vname(from), vname(to)] });
  } catch (err) {
    out.replaceChildren(el("p", { class: "error", text: `Could not compute the diff: ${err.message}` }));
  }
}
async function runOne(id, outId, statsId) {
  const out = $2(outId);
  const text = document.createTextNode("");
  out.replaceChildren(text);
  $2(statsId).textContent = "running\u2026";
  const stats = await streamChat({
    request: { variables: {} },
    url: `${cfg.apiBase}/versions/${id}/run`,
    onToken: (t) => text.appendData(t)
  });
  const tps = tokensPerSecond(stats);
  $2(statsId).textContent = `TTFT ${Math.round(stats.ttftMs ?? 0)} ms \xB7 ${completionTokens(stats)} tokens${tps ? ` \xB7 ${tps.toFixed(1)} tok/s` : ""}`;
}
async function runBoth() {
  const from = $2("diff-from").value, to = $2("diff-to").value;
  $2("compare-out").hidden = false;
  showAlert($2("compare-error"), "");
  $2("cmp-a-title").textContent = `${vname(from)} output`;
  $2("cmp-b-title").textContent = `${vname(to)} output`;
  const results = await Promise.allSettled([runOne(from, "cmp-a", "cmp-a-stats"), runOne(to, "cmp-b", "cmp-b-stats")]);
  const errors = results.filter((r) => r.status === "rejected").map((r) => describeRunError(r.reason));
  showAlert($2("compare-error"), errors.join(" "));
}
var merging = null;
function hunkView(part, hunks) {
  const box = el("div", { class: "merge-part" }, el("strong", { text: part === "body" ? "User message template" : "System" }));
  hunks.forEach((h, i) => {
    if (h.kind === "same") {
      box.append(el("pre", { class: "ro-text merge-same", text: h.text || "(empty)" }));
      return;
    }
    const pick = (choice) => {
      h.choice = choice;
      renderMerge();
    };
    const side = (who, text) => el(
      "div",
      { class: `merge-side ${h.choice === who ? "chosen" : ""}` },
      el("div", { class: "hint", text: who === "ours" ? `ours (${vname(merging.ours)})` : `theirs (${vname(merging.theirs)})` }),
      el("pre", { class: "ro-text", text: text || "(nothing)" }),
      el("button", { type: "button", class: "btn small", "data-choose": `${part}-${i}-${who}`, text: "Use this" })
    );
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
  const out = $2("merge-out");
  const left = [...merging.system.hunks, ...merging.body.hunks].filter((h) => h.kind === "conflict" && !h.choice).length;
  const save = el("button", { type: "button", class: "btn primary", id: "merge-save", text: "Save the merge" });
  save.disabled = left > 0;
  save.addEventListener("click", saveMerge);
  out.replaceChildren(
    el("p", { class: "hint", id: "merge-summary", text: `Merging ${vname(merging.theirs)} into ${vname(merging.ours)} (common ancestor ${vname(merging.base)}): ` + (merging.conflicts ? `${merging.conflicts} conflict(s), ${left} left to resolve.` : "no conflicts.") + (merging.tools_differing ? ` Both changed the tools: the merge keeps ours (${vname(merging.ours)}).` : "") + (merging.messages_differing ? ` Both changed the messages: the merge keeps ours (${vname(merging.ours)}).` : "") }),
    hunkView("system", merging.system.hunks),
    hunkView("body", merging.body.hunks),
    save
  );
}
async function previewMerge() {
  const out = $2("merge-out");
  try {
    merging = await api(`${cfg.apiBase}/merge`, { method: "POST", body: { ours: $2("diff-from").value, theirs: $2("diff-to").value } });
    renderMerge();
  } catch (err) {
    out.replaceChildren(el("p", { class: "error", id: "merge-error", text: `Cannot merge: ${err.message}` }));
  }
}
async function saveMerge() {
  const ours = await api(`${cfg.apiBase}/versions/${merging.ours}`);
  try {
    const made = await api(`${cfg.apiBase}/versions`, { method: "POST", body: {
      parent: merging.ours,
      merge_parent: merging.theirs,
      message: merging.message,
      model: ours.model,
      temperature: ours.temperature,
      max_tokens: ours.max_tokens,
      top_p: ours.top_p,
      seed: ours.seed,
      stop: ours.stop,
      response_schema: ours.response_schema,
      tools: merging.tools,
      tool_choice: ours.tool_choice,
      messages: merging.messages,
      variables: merging.variables,
      system: resolved(merging.system.hunks),
      body: resolved(merging.body.hunks)
    } });
    merging = null;
    selected = made.id;
    await refresh();
    openVersion(made.id);
    $2("merge-out").replaceChildren(el("p", { class: "hint", id: "merge-done", text: `Saved as v${made.number}.` }));
  } catch (err) {
    $2("merge-out").append(el("p", { class: "error", text: `Could not save the merge: ${err.message}` }));
  }
}
$2("diff-btn").addEventListener("click", showDiff);
$2("compare-run").addEventListener("click", runBoth);
$2("merge-btn")?.addEventListener("click", previewMerge);
refresh().then(() => selected && openVersion(selected)).then(labels.refresh).catch(fail);
