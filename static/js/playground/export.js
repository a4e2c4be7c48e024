// The export dialog: the saved version as curl / Python / JavaScript code,
// from GET .../versions/<id>/export. It follows the version being edited
// through the "playground:version" event that playground.js sends.

import { api, pageConfig } from "./api.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();
const dialog = $("export-dialog");
let version = cfg.versionId ? { id: cfg.versionId, number: null } : null;
let loaded = null; // { versionId, data } of the last fetched export
let lang = "curl";

document.addEventListener("playground:version", (e) => {
  version = e.detail;
  if (dialog.open) refresh();
});

$("export-open").addEventListener("click", () => { dialog.showModal(); refresh(); });
$("export-close").addEventListener("click", () => dialog.close());
dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); }); // backdrop
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
    $("export-note").textContent = "Loading…";
    try {
      loaded = { versionId: version.id, data: await api(`${cfg.apiBase}/versions/${version.id}/export`) };
    } catch (err) {
      $("export-note").textContent = err.message;
      return;
    }
  }
  const data = loaded.data;
  $("export-note").textContent = `Version ${data.version_number} as saved (unsaved edits are not included). ` +
    (data.reference.kind === "label" ? `By reference runs whatever the label “${data.reference.name}” points at.`
                                     : "By reference runs this version id.");
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
    tab.addEventListener("click", () => { lang = id; tabs(data); show(); });
    root.append(tab);
  }
}

function show() {
  if (!loaded) return;
  const form = $("export-form").value;
  const forms = loaded.data.snippets.filter((s) => s.lang === lang);
  // The openai SDK speaks only /v1: it has no reference form.
  $("export-form").querySelector('option[value="reference"]').disabled = !forms.some((s) => s.form === "reference");
  const snippet = forms.find((s) => s.form === form) || forms[0];
  $("export-form").value = snippet.form;
  $("export-code").textContent = snippet.code; // textContent: the code is shown, never parsed as HTML
  $("export-file").textContent = snippet.filename;
}

async function copy() {
  const text = $("export-code").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (plain http): select the code so Ctrl+C copies it.
    const range = document.createRange();
    range.selectNodeContents($("export-code"));
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    $("export-copy-status").textContent = "Selected: press Ctrl+C (or ⌘C) to copy.";
    return;
  }
  $("export-copy-status").textContent = "Copied.";
}
