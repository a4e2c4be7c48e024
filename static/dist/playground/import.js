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
function showAlert(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// static/js/playground/import.js
var open = document.getElementById("import-open");
var input = document.getElementById("import-file");
var status = document.getElementById("import-status");
var error = document.getElementById("import-error");
open.addEventListener("click", () => input.click());
input.addEventListener("change", async () => {
  const file = input.files[0];
  if (!file) return;
  showAlert(error, "");
  status.textContent = `Importing ${file.name}\u2026`;
  open.disabled = true;
  try {
    const res = await fetch("/api/prompts/import", {
      method: "POST",
      credentials: "same-origin",
      headers: headers({ "Content-Type": "application/json" }),
      body: await file.text()
    });
    if (!res.ok) throw await errorFrom(res);
    const prompt = await res.json();
    status.textContent = `Imported \u201C${prompt.title}\u201D (${prompt.versions} versions).`;
    window.location.assign(prompt.url);
  } catch (e) {
    status.textContent = "";
    showAlert(error, `Could not import ${file.name}: ${e.message}`);
  } finally {
    open.disabled = false;
    input.value = "";
  }
});
