// Copy and Fork (templates/playground/_prompt_actions.html). On the playground page
// they follow the version being edited ("playground:version" from playground.js);
// on a share-link page, the version shown (its calls carry the link's token: api.js).

import { api, pageConfig } from "./api.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();
let versionId = cfg.versionId || null;

document.addEventListener("playground:version", (e) => { versionId = e.detail ? e.detail.id : null; });

function status(text) { $("action-status").textContent = text; }

// The prompt as shown: the editors' texts (unsaved edits included), or the share page's version.
function promptText() {
  const system = ($("system-input") ? $("system-input").value : $("system-text")?.textContent) || "";
  const body = ($("body-input") ? $("body-input").value : $("body-text")?.textContent) || "";
  return system.trim() ? `System:\n${system}\n\nUser:\n${body}` : body;
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
