// The prompt list's "Import prompt": post a prompt-history file (docs/prompts.md)
// to /api/prompts/import, then open the new prompt.
import { errorFrom, headers, showAlert } from "./api.js";

const open = document.getElementById("import-open");
const input = document.getElementById("import-file");
const status = document.getElementById("import-status");
const error = document.getElementById("import-error");

open.addEventListener("click", () => input.click());

input.addEventListener("change", async () => {
  const file = input.files[0];
  if (!file) return;
  showAlert(error, "");
  status.textContent = `Importing ${file.name}…`;
  open.disabled = true;
  try {
    const res = await fetch("/api/prompts/import", {
      method: "POST", credentials: "same-origin",
      headers: headers({ "Content-Type": "application/json" }), body: await file.text(),
    });
    if (!res.ok) throw await errorFrom(res);
    const prompt = await res.json();
    status.textContent = `Imported “${prompt.title}” (${prompt.versions} versions).`;
    window.location.assign(prompt.url);
  } catch (e) {
    status.textContent = "";
    showAlert(error, `Could not import ${file.name}: ${e.message}`);
  } finally {
    open.disabled = false;
    input.value = "";
  }
});
