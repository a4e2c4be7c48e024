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

// static/js/playground/export.js
var $ = (id) => document.getElementById(id);
var cfg = pageConfig();
var dialog = $("export-dialog");
var version = cfg.versionId ? { id: cfg.versionId, number: null } : null;
var loaded = null;
var lang = "curl";
document.addEventListener("playground:version", (e) => {
  version = e.detail;
  if (dialog.open) refresh();
});
$("export-open").addEventListener("click", () => {
  dialog.showModal();
  refresh();
});
$("export-close").addEventListener("click", () => dialog.close());
dialog.addEventListener("click", (e) => {
  if (e.target === dialog) dialog.close();
});
$("export-form").addEventListener("change", show);
$("export-copy").addEventListener("click", copy);
async function refresh() {
  $("export-copy-status").textContent = "";
  if (!version) {
    $("export-note").textContent = "Save a version first: export shows a saved version, never a draft.";
    $("export-controls").hidden = $("export-panel").hidden = true;
    return;
  }
  if (!loaded || loaded.versionId !== version.id) {
    $("export-note").textContent = "Loading\u2026";
    try {
      loaded = { versionId: version.id, data: await api(`${cfg.apiBase}/versions/${version.id}/export`) };
    } catch (err) {
      $("export-note").textContent = err.message;
      return;
    }
  }
  const data = loaded.data;
  $("export-note").textContent = `Version ${data.version_number} as saved (unsaved edits are not included). ` + (data.reference.kind === "label" ? `By reference runs whatever the label \u201C${data.reference.name}\u201D points at.` : "By reference runs this version id.");
  $("export-controls").hidden = $("export-panel").hidden = false;
  tabs(data);
  show();
}
function tabs(data) {
  const root = $("export-langs");
  root.replaceChildren();
  const langs = [...new Map(data.snippets.map((s) => [s.lang, s.title])).entries()];
  for (const [id, title] of langs) {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.className = "btn small";
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-selected", String(id === lang));
    tab.dataset.lang = id;
    tab.textContent = title;
    tab.addEventListener("click", () => {
      lang = id;
      tabs(data);
      show();
    });
    root.append(tab);
  }
}
function show() {
  if (!loaded) return;
  const form = $("export-form").value;
  const forms = loaded.data.snippets.filter((s) => s.lang === lang);
  $("export-form").querySelector('option[value="reference"]').disabled = !forms.some((s) => s.form === "reference");
  const snippet = forms.find((s) => s.form === form) || forms[0];
  $("export-form").value = snippet.form;
  $("export-code").textContent = snippet.code;
  $("export-file").textContent = snippet.filename;
}
async function copy() {
  const text = $("export-code").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const range = document.createRange();
    range.selectNodeContents($("export-code"));
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    $("export-copy-status").textContent = "Selected: press Ctrl+C (or \u2318C) to copy.";
    return;
  }
  $("export-copy-status").textContent = "Copied.";
}
