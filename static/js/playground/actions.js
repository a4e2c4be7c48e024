// Copy and Fork (templates/playground/_prompt_actions.html). On the playground page
// they follow the version being edited ("playground:version" from playground.js);
// on a share-link page, the version shown (its calls carry the link's token: api.js).

import { api, pageConfig } from "./api.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();
let versionId = cfg.versionId || null;

document.addEventListener("playground:version", (e) => { versionId = e.detail ? e.detail.id : null; });

function status(text) { $("action-status").textContent = text; }

// The turns as shown: the playground's turn editors (messages.js), or a share page's version.
function turnsShown() {
  return [...document.querySelectorAll("#turns .turn-row, #turns-shown .turn-shown")].map((row) => ({
    role: row.querySelector(".role-select")?.value ?? row.dataset.role,
    content: row.querySelector("textarea.turn")?.value ?? row.textContent,
  }));
}

// The prompt as shown (unsaved edits included): each part under its role, or the body alone.
function promptText() {
  const system = ($("system-input") ? $("system-input").value : $("system-text")?.textContent) || "";
  const body = ($("body-input") ? $("body-input").value : $("body-text")?.textContent) || "";
  const turns = turnsShown();
  if (!system.trim() && !turns.length) return body;
  const parts = [...(system.trim() ? [{ role: "system", content: system }] : []), ...turns,
                 { role: "user", content: body }];
  return parts.map((p) => `${p.role[0].toUpperCase()}${p.role.slice(1)}:\n${p.content}`).join("\n\n");
}

async function copy() {
  try {
    await navigator.clipboard.writeText(promptText());
    status("Copied the prompt text.");
  } catch {
    status("The browser refused the clipboard: select the text and press Ctrl+C (or ⌘C).");
  }
}

async function fork() {
  if (!versionId) { status("Nothing to fork yet: this prompt has no saved version."); return; }
  $("fork-btn").disabled = true;
  try {
    const made = await api(`${cfg.apiBase}/fork`, { method: "POST", body: { version: versionId } });
    status(`Forked into “${made.title}”: opening it…`);
    window.location.assign(`/prompts/${made.id}/`);
  } catch (err) {
    status(`Not forked: ${err.message}`);
    $("fork-btn").disabled = false;
  }
}

$("copy-btn")?.addEventListener("click", copy);
$("fork-btn")?.addEventListener("click", fork);
