// The owner's share dialog: links (public / login, pinned version, expiry) and
// grants to users or teams, each listed with a revoke button. A prompt's pages and
// a dataset's use it (cfg.apiBase; a dataset's has no version picker: its links
// read every version).

import { api, apiAll, el, pageConfig, showAlert } from "./api.js";
import { confirmed, copyOnClick, reveal } from "../reveal.js";

const cfg = pageConfig();
const $ = (id) => document.getElementById(id);
const dialog = $("share-dialog");
const opener = $("share-open");
const base = cfg.apiBase;
const fmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
let versions = new Map(); // version id -> number, for labels of pinned links

const when = (iso) => (iso ? fmt.format(new Date(iso)) : "");
const fail = (err) => showAlert($("share-error"), err.message);

function badge(text, kind = "muted") { return el("span", { class: `badge ${kind}`, text }); }

function revokeButton(label, onConfirm) {
  const btn = el("button", { type: "button", class: "btn small", text: "Revoke", "aria-label": `Revoke ${label}` });
  btn.addEventListener("click", async () => {
    if (!confirmed(btn)) return;
    btn.disabled = true;
    try { await onConfirm(); } catch (err) { fail(err); btn.disabled = false; }
  });
  return btn;
}

function linkRow(link) {
  const pinned = link.version ? `v${versions.get(link.version) ?? "?"} only` : "all versions";
  const parts = [link.mode === "public" ? "anyone" : "signed-in users", pinned];
  if (link.expires_at) parts.push(`${link.state === "expired" ? "expired" : "expires"} ${when(link.expires_at)}`);
  return el("li", { "data-link": link.id, "data-state": link.state },
    el("div", { class: "who" }, el("strong", { text: link.name || "Unnamed link" }),
      el("span", { class: "hint", text: ` · ${parts.join(" · ")} · created ${when(link.created_at)}` })),
    link.state === "active"
      ? revokeButton(`link ${link.name || ""}`.trim(), async () => {
        await api(`${base}/links/${link.id}`, { method: "DELETE" });
        await loadLinks();
      })
      : badge(link.state, link.state === "revoked" ? "danger" : "muted"));
}

function grantRow(grant) {
  const who = grant.username || `team ${grant.team_name}`;
  const live = !grant.revoked_at && !(grant.expires_at && new Date(grant.expires_at) <= new Date());
  return el("li", { "data-grant": grant.id, "data-state": live ? "active" : "revoked" },
    el("div", { class: "who" }, el("strong", { text: who }),
      el("span", { class: "hint", text: ` · ${grant.role} · since ${when(grant.created_at)}` })),
    live && grant.username ? messageLink(grant.username) : null,
    live
      ? revokeButton(who, async () => {
        await api(`${base}/grants/${grant.id}`, { method: "DELETE" });
        await loadGrants();
      })
      : badge(grant.revoked_at ? "revoked" : "expired", "muted"));
}

// A chat with the grantee, its draft naming this prompt (the chat page puts `about` in the composer).
function messageLink(username) {
  const about = `About “${cfg.prompt ? cfg.prompt.title : cfg.dataset.name}”: ${location.origin}${location.pathname}`;
  const href = `/chat/?with=${encodeURIComponent(username)}&about=${encodeURIComponent(about)}`;
  return el("a", { class: "btn small", href, text: "Message", "aria-label": `Message ${username}` });
}

function fill(list, rows, emptyText) {
  list.replaceChildren(...(rows.length ? rows : [el("li", { class: "hint empty", text: emptyText })]));
}

async function loadLinks() {
  const links = await apiAll(`${base}/links`);
  fill($("share-links"), links.map(linkRow), "No links yet.");
}

async function loadGrants() {
  const grants = await apiAll(`${base}/grants`);
  // Revoked grants stay in the audit log; the dialog shows who has access now.
  fill($("share-grants"), grants.filter((g) => !g.revoked_at).map(grantRow), "Only you have access.");
}

async function loadChoices() {
  const select = $("share-version");
  if (select) {
    const list = await apiAll(`${base}/versions`);
    versions = new Map(list.map((v) => [v.id, v.number]));
    select.replaceChildren(select.options[0],
      ...list.sort((a, b) => b.number - a.number)
        .map((v) => el("option", { value: v.id, text: `Only v${v.number}${v.message ? ` · ${v.message}` : ""}` })));
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
  } catch (err) { fail(err); }
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
    expires_at: days ? new Date(Date.now() + days * 86_400_000).toISOString() : null,
  };
  try {
    const link = await api(`${base}/links`, { method: "POST", body });
    reveal($("share-url"), link.url, $("share-new"), $("share-copy-status"));
    $("share-name").value = "";
    await loadLinks();
  } catch (err) { fail(err); }
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
  if (!team && !body.username) { fail(new Error("Type the username of the person to share with.")); return; }
  try {
    await api(`${base}/grants`, { method: "POST", body });
    $("share-username").value = "";
    await loadGrants();
  } catch (err) { fail(err); }
});

opener.addEventListener("click", open);
$("share-close").addEventListener("click", close);
// <dialog> returns focus to the opener itself in current browsers; be explicit for the rest.
dialog.addEventListener("close", () => opener.focus());
// A click on the backdrop (the dialog element itself, outside its content) closes it.
dialog.addEventListener("click", (e) => { if (e.target === dialog) close(); });
