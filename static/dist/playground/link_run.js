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
function showAlert(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// static/js/playground/link_run.js
var $ = (id) => document.getElementById(id);
var cfg = pageConfig();
async function run(e) {
  e.preventDefault();
  const variables = {};
  for (const input of document.querySelectorAll("#link-run-form [data-var]")) {
    if (input.value !== "") variables[input.dataset.var] = input.value;
  }
  const out = $("output");
  $("run-btn").disabled = true;
  showAlert($("run-error"), "");
  out.textContent = "Running\u2026";
  try {
    const done = await api(`${cfg.apiBase}/versions/${cfg.versionId}/run`, { method: "POST", body: { variables } });
    const message = done.choices[0].message;
    out.textContent = message.content ?? JSON.stringify(message.tool_calls, null, 2);
    out.classList.remove("empty");
  } catch (err) {
    out.textContent = "";
    showAlert($("run-error"), `${err.message} (${err.code})`);
  } finally {
    $("run-btn").disabled = false;
  }
}
$("link-run-form").addEventListener("submit", run);
