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
function showAlert(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// static/js/reveal.js
function reveal(input, value, panel, status) {
  input.value = value;
  status.textContent = "";
  panel.hidden = false;
  input.focus();
  input.select();
}
function copyOnClick(button, input, status, noun) {
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(input.value);
      status.textContent = "Copied to the clipboard.";
    } catch {
      input.select();
      status.textContent = `Press Ctrl+C (\u2318C) to copy the selected ${noun}.`;
    }
  });
}
function confirmed(btn) {
  if (btn.dataset.armed) return true;
  btn.dataset.armed = "1";
  btn.textContent = "Confirm revoke";
  btn.classList.add("danger");
  return false;
}

// static/js/api_keys.js
var cfg = pageConfig();
var $ = (id) => document.getElementById(id);
var fail = (err) => showAlert($("key-error"), err.message);
var stamp = (iso) => new Date(iso).toISOString().slice(0, 16).replace("T", " ");
function row(key) {
  const tier = cfg.tiers[key.tier];
  const [rpm, tpm] = [tier.requests_per_min, tier.tokens_per_min].map((n) => n.toLocaleString("en-US"));
  const remaining = cfg.limitsEnforced ? `${rpm}/${rpm} req \xB7 ${tpm}/${tpm} tok` : "not limited";
  const cell = (label, ...content) => el("td", { "data-label": label }, ...content);
  return el(
    "tr",
    { "data-key": key.id, "data-state": "active" },
    cell("Name", key.name),
    cell("Key", el("code", { text: `${key.prefix}\u2026` })),
    cell("Tier", key.tier),
    cell("Created", stamp(key.created_at)),
    cell("Last used", "never"),
    cell("Last 24 h", "0 req \xB7 0 tok"),
    cell("Remaining now", remaining),
    el("td", { "data-label": "Status", class: "key-status" }, el("span", { class: "badge ok", text: "active" })),
    el("td", { class: "key-actions" }, el("button", {
      type: "button",
      class: "btn small",
      "data-revoke": key.id,
      "aria-label": `Revoke key ${key.name}`,
      text: "Revoke"
    }))
  );
}
$("key-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  showAlert($("key-error"), "");
  const button = $("key-create");
  button.disabled = true;
  try {
    const key = await api("/api/accounts/keys", {
      method: "POST",
      body: { name: $("key-name").value.trim() }
    });
    reveal($("key-raw"), key.key, $("key-new"), $("key-copy-status"));
    $("key-name").value = "";
    $("key-rows").querySelector("tr.empty")?.remove();
    $("key-rows").prepend(row(key));
  } catch (err) {
    fail(err);
  } finally {
    button.disabled = false;
  }
});
copyOnClick($("key-copy"), $("key-raw"), $("key-copy-status"), "key");
$("key-rows").addEventListener("click", async (e) => {
  const btn = e.target.closest("button[data-revoke]");
  if (!btn || !confirmed(btn)) return;
  btn.disabled = true;
  showAlert($("key-error"), "");
  try {
    await api(`/api/accounts/keys/${btn.dataset.revoke}`, { method: "DELETE" });
    const tr = btn.closest("tr");
    tr.dataset.state = "revoked";
    tr.querySelector(".key-status").replaceChildren(el("span", { class: "badge muted", text: "revoked" }));
    tr.querySelector('[data-label="Remaining now"]').textContent = "\u2013";
    $("keys-h").setAttribute("tabindex", "-1");
    $("keys-h").focus();
    btn.remove();
  } catch (err) {
    fail(err);
    btn.disabled = false;
  }
});
