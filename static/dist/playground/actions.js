// static/js/playground/api.js
var ApiError = class extends Error {
  constructor(status2, body, retryAfter = null) {
    const err = body && body.error || {};
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

// static/js/playground/actions.js
var $ = (id) => document.getElementById(id);
var cfg = pageConfig();
var versionId = cfg.versionId || null;
document.addEventListener("playground:version", (e) => {
  versionId = e.detail ? e.detail.id : null;
});
function status(text) {
  $("action-status").textContent = text;
}
function turnsShown() {
  return [...document.querySelectorAll("#turns .turn-row, #turns-shown .turn-shown")].map((row) => ({
    role: row.querySelector(".role-select")?.value ?? row.dataset.role,
    content: row.querySelector("textarea.turn")?.value ?? row.textContent
  }));
}
function promptText() {
  const system = ($("system-input") ? $("system-input").value : $("system-text")?.textContent) || "";
  const body = ($("body-input") ? $("body-input").value : $("body-text")?.textContent) || "";
  const turns = turnsShown();
  if (!system.trim() && !turns.length) return body;
  const parts = [
    ...system.trim() ? [{ role: "system", content: system }] : [],
    ...turns,
    { role: "user", content: body }
  ];
  return parts.map((p) => `${p.role[0].toUpperCase()}${p.role.slice(1)}:
${p.content}`).join("\n\n");
}
async function copy() {
  try {
    await navigator.clipboard.writeText(promptText());
    status("Copied the prompt text.");
  } catch {
    status("The browser refused the clipboard: select the text and press Ctrl+C (or \u2318C).");
  }
}
async function fork() {
  if (!versionId) {
    status("Nothing to fork yet: this prompt has no saved version.");
    return;
  }
  $("fork-btn").disabled = true;
  try {
    const made = await api(`${cfg.apiBase}/fork`, { method: "POST", body: { version: versionId } });
    status(`Forked into \u201C${made.title}\u201D: opening it\u2026`);
    window.location.assign(`/prompts/${made.id}/`);
  } catch (err) {
    status(`Not forked: ${err.message}`);
    $("fork-btn").disabled = false;
  }
}
$("copy-btn")?.addEventListener("click", copy);
$("fork-btn")?.addEventListener("click", fork);
