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

// static/js/playground/share.js
var cfg = pageConfig();
var $ = (id) => document.getElementById(id);
var dialog = $("share-dialog");
var opener = $("share-open");
var base = cfg.apiBase;
var fmt = new Intl.DateTimeFormat(void 0, { dateStyle: "medium", timeStyle: "short" });
var versions = /* @__PURE__ */ new Map();
var when = (iso) => iso ? fmt.format(new Date(iso)) : "";
var fail = (err) => showAlert($("share-error"), err.message);
function badge(text, kind = "muted") {
  return el("span", { class: `badge ${kind}`, text });
}
function revokeButton(label, onConfirm) {
  const btn = el("button", { type: "button", class: "btn small", text: "Revoke", "aria-label": `Revoke ${label}` });
  btn.addEventListener("click", async () => {
    if (!confirmed(btn)) return;
    btn.disabled = true;
    try {
      await onConfirm();
    } catch (err) {
      fail(err);
      btn.disabled = false;
    }
  });
  return btn;
}
function linkRow(link) {
  const pinned = link.version ? `v${versions.get(link.version) ?? "?"} only` : "all versions";
  const parts = [link.mode === "public" ? "anyone" : "signed-in users", pinned];
  if (link.expires_at) parts.push(`${link.state === "expired" ? "expired" : "expires"} ${when(link.expires_at)}`);
  return el(
    "li",
    { "data-link": link.id, "data-state": link.state },
    el(
      "div",
      { class: "who" },
      el("strong", { text: link.name || "Unnamed link" }),
      el("span", { class: "hint", text: ` \xB7 ${parts.join(" \xB7 ")} \xB7 created ${when(link.created_at)}` })
    ),
    link.state === "active" ? revokeButton(`link ${link.name || ""}`.trim(), async () => {
      await api(`${base}/links/${link.id}`, { method: "DELETE" });
      await loadLinks();
    }) : badge(link.state, link.state === "revoked" ? "danger" : "muted")
  );
}
function grantRow(grant) {
  const who = grant.username || `team ${grant.team_name}`;
  const live = !grant.revoked_at && !(grant.expires_at && new Date(grant.expires_at) <= /* @__PURE__ */ new Date());
  return el(
    "li",
    { "data-grant": grant.id, "data-state": live ? "active" : "revoked" },
    el(
      "div",
      { class: "who" },
      el("strong", { text: who }),
      el("span", { class: "hint", text: ` \xB7 ${grant.role} \xB7 since ${when(grant.created_at)}` })
    ),
    live && grant.username ? messageLink(grant.username) : null,
    live ? revokeButton(who, async () => {
      await api(`${base}/grants/${grant.id}`, { method: "DELETE" });
      await loadGrants();
    }) : badge(grant.revoked_at ? "revoked" : "expired", "muted")
  );
}
function messageLink(username) {
  const about = `About \u201C${cfg.prompt ? cfg.prompt.title : cfg.dataset.name}\u201D: ${location.origin}${location.pathname}`;
  const href = `/chat/?with=${encodeURIComponent(username)}&about=${encodeURIComponent(about)}`;
  return el("a", { class: "btn small", href, text: "Message", "aria-label": `Message ${username}` });
}
function fill(list, rows, emptyText) {
  list.replaceChildren(...rows.length ? rows : [el("li", { class: "hint empty", text: emptyText })]);
}
async function loadLinks() {
  const links = await apiAll(`${base}/links`);
  fill($("share-links"), links.map(linkRow), "No links yet.");
}
async function loadGrants() {
  const grants = await apiAll(`${base}/grants`);
  fill($("share-grants"), grants.filter((g) => !g.revoked_at).map(grantRow), "Only you have access.");
}
async function loadChoices() {
  const select = $("share-version");
  if (select) {
    const list = await apiAll(`${base}/versions`);
    versions = new Map(list.map((v) => [v.id, v.number]));
    select.replaceChildren(
      select.options[0],
      ...list.sort((a, b) => b.number - a.number).map((v) => el("option", { value: v.id, text: `Only v${v.number}${v.message ? ` \xB7 ${v.message}` : ""}` }))
    );
  }
  const teams = await api("/api/accounts/teams");
  $("share-team").replaceChildren(...teams.map((t) => el("option", { value: t.id, text: t.name })));
  $("share-grantee-kind").querySelector('option[value="team"]').disabled = teams.length === 0;
}
async function open() {
  showAlert($("share-error"), "");
  $("share-new").hidden = true;
  dialog.showModal();
  try {
    await loadChoices();
    await Promise.all([loadLinks(), loadGrants()]);
  } catch (err) {
    fail(err);
  }
}
function close() {
  dialog.close();
}
$("share-link-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  showAlert($("share-error"), "");
  const days = Number($("share-expiry").value);
  const body = {
    mode: $("share-mode").value,
    name: $("share-name").value.trim(),
    version: $("share-version")?.value || null,
    expires_at: days ? new Date(Date.now() + days * 864e5).toISOString() : null
  };
  try {
    const link = await api(`${base}/links`, { method: "POST", body });
    reveal($("share-url"), link.url, $("share-new"), $("share-copy-status"));
    $("share-name").value = "";
    await loadLinks();
  } catch (err) {
    fail(err);
  }
});
copyOnClick($("share-copy"), $("share-url"), $("share-copy-status"), "link");
$("share-grantee-kind").addEventListener("change", () => {
  const team = $("share-grantee-kind").value === "team";
  $("share-team-field").hidden = !team;
  $("share-user-field").hidden = team;
});
$("share-grant-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  showAlert($("share-error"), "");
  const team = $("share-grantee-kind").value === "team";
  const body = { role: $("share-role").value };
  if (team) body.team = Number($("share-team").value);
  else body.username = $("share-username").value.trim();
  if (!team && !body.username) {
    fail(new Error("Type the username of the person to share with."));
    return;
  }
  try {
    await api(`${base}/grants`, { method: "POST", body });
    $("share-username").value = "";
    await loadGrants();
  } catch (err) {
    fail(err);
  }
});
opener.addEventListener("click", open);
$("share-close").addEventListener("click", close);
dialog.addEventListener("close", () => opener.focus());
dialog.addEventListener("click", (e) => {
  if (e.target === dialog) close();
});
