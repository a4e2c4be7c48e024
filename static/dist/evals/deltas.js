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

// static/js/evals/deltas.js
var $ = (id) => document.getElementById(id);
var cfg = pageConfig();
var out = $("eval-deltas");
var sign = (x) => (x > 0 ? "+" : x < 0 ? "\u2212" : "\xB1") + Math.abs(x).toFixed(2);
var timer = null;
var shown = null;
async function show() {
  const version = $("diff-to").value;
  if (!version) return;
  shown = version;
  clearTimeout(timer);
  let d;
  try {
    d = await api(`${cfg.apiBase}/versions/${version}/eval-deltas`);
  } catch (err) {
    out.replaceChildren(el("p", { class: "hint", text: `No scores: ${err.message}` }));
    return;
  }
  if (shown !== version) return;
  const pinned = d.pinned_dataset ? `pinned dataset: ${d.pinned_dataset.name}` : "no pinned dataset";
  if (!d.parent) {
    out.replaceChildren(el("p", { class: "hint", text: `Scores: this version has no parent (${pinned}).` }));
    return;
  }
  if (!d.run) {
    out.replaceChildren(el("p", { class: "hint", text: `Scores against its parent: no run has both yet (${pinned}; pin a dataset on its page to run each saved version).` }));
    return;
  }
  const name = $("diff-to").selectedOptions[0]?.textContent.split(" ")[0] || "This version";
  const head = el(
    "p",
    { class: "hint" },
    `Scores of ${name} against its parent on `,
    el("a", { href: d.run.url, text: `${d.run.dataset.name} v${d.run.dataset.version}` }),
    ` (${d.run.status})`
  );
  const scores = Object.entries(d.run.scores);
  if (d.run.status !== "done" || !scores.length) {
    out.replaceChildren(head, ...d.run.status === "done" ? [el("p", { class: "hint", text: "The run scored nothing." })] : []);
    if (["queued", "running"].includes(d.run.status)) timer = setTimeout(show, 2e3);
    return;
  }
  out.replaceChildren(head, el("ul", { class: "ev-deltas" }, ...scores.map(([key, s]) => el("li", {
    class: s.delta > 0 ? "up" : s.delta < 0 ? "down" : "same",
    "data-evaluator": key,
    text: `${key}: ${s.parent.toFixed(2)} \u2192 ${s.version.toFixed(2)} (${sign(s.delta)})`
  }))));
}
if (out && cfg.apiBase) {
  $("diff-to").addEventListener("change", show);
  $("diff-btn").addEventListener("click", show);
  new MutationObserver(show).observe($("diff-to"), { childList: true });
  show();
}
