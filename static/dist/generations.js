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
function showAlert(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// static/js/generations.js
var $ = (id) => document.getElementById(id);
var current = null;
var datasetsLoaded = false;
async function loadDatasets() {
  const page = await api("/api/datasets/?page_size=200");
  $("case-dataset").replaceChildren(...page.results.length ? page.results.map((d) => el("option", { value: d.id, text: d.name })) : [el("option", { value: "", text: "No datasets yet (create one under Evals)" })]);
  datasetsLoaded = true;
}
async function open(id) {
  current = id;
  $("case-status").textContent = "Loading\u2026";
  $("case-expected").value = "";
  $("case-dialog").showModal();
  try {
    const [generation] = await Promise.all([
      api(`/api/generations/${id}`),
      datasetsLoaded ? null : loadDatasets()
    ]);
    const output = generation.output_url ? await (await fetch(generation.output_url, { credentials: "same-origin" })).text() : generation.output;
    $("case-expected").value = output;
    const names = Object.keys(generation.variables);
    $("case-vars").textContent = names.length ? `Inputs: ${names.join(", ")}` : "No variables.";
    $("case-status").textContent = "";
  } catch (err) {
    $("case-status").textContent = err.message;
  }
}
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-add-case]");
  if (button) open(button.dataset.addCase);
});
$("case-close").addEventListener("click", () => $("case-dialog").close());
$("case-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const dataset = $("case-dataset").value;
  if (!dataset || current === null) return;
  try {
    const version = await api(`/api/generations/${current}/test-case`, {
      method: "POST",
      body: { dataset_id: dataset, expected: $("case-expected").value }
    });
    $("case-status").textContent = `Added as row ${version.row_count} of dataset version ${version.number}.`;
  } catch (err) {
    $("case-status").textContent = `Could not add: ${err.message}`;
    showAlert($("gen-error"), "");
  }
});
