// API keys page: create a key (shown once, with a copy button) and revoke keys.
// The table is server-rendered; new and revoked rows are patched in place.

import { api, el, pageConfig, showAlert } from "./playground/api.js";
import { confirmed, copyOnClick, reveal } from "./reveal.js";

const cfg = pageConfig();
const $ = (id) => document.getElementById(id);
const fail = (err) => showAlert($("key-error"), err.message);
const stamp = (iso) => new Date(iso).toISOString().slice(0, 16).replace("T", " ");

function row(key) {
  const tier = cfg.tiers[key.tier];
  // A new key has never been charged: its buckets are full.
  const [rpm, tpm] = [tier.requests_per_min, tier.tokens_per_min].map((n) => n.toLocaleString("en-US"));
  const remaining = cfg.limitsEnforced ? `${rpm}/${rpm} req · ${tpm}/${tpm} tok` : "not limited";
  const cell = (label, ...content) => el("td", { "data-label": label }, ...content);
  return el("tr", { "data-key": key.id, "data-state": "active" },
    cell("Name", key.name), cell("Key", el("code", { text: `${key.prefix}…` })), cell("Tier", key.tier),
    cell("Created", stamp(key.created_at)), cell("Last used", "never"), cell("Last 24 h", "0 req · 0 tok"),
    cell("Remaining now", remaining),
    el("td", { "data-label": "Status", class: "key-status" }, el("span", { class: "badge ok", text: "active" })),
    el("td", { class: "key-actions" }, el("button", { type: "button", class: "btn small", "data-revoke": key.id,
      "aria-label": `Revoke key ${key.name}`, text: "Revoke" })));
}

$("key-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  showAlert($("key-error"), "");
  const button = $("key-create");
  button.disabled = true;
  try {
    const key = await api("/api/accounts/keys", {
      method: "POST", body: { name: $("key-name").value.trim() } });
    reveal($("key-raw"), key.key, $("key-new"), $("key-copy-status"));
    $("key-name").value = "";
    $("key-rows").querySelector("tr.empty")?.remove();
    $("key-rows").prepend(row(key));
  } catch (err) { fail(err); } finally { button.disabled = false; }
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
    tr.querySelector('[data-label="Remaining now"]').textContent = "–";
    // The table loses the button; keep keyboard focus on the page, not on <body>.
    $("keys-h").setAttribute("tabindex", "-1");
    $("keys-h").focus();
    btn.remove();
  } catch (err) { fail(err); btn.disabled = false; }
});
