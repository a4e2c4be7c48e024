// Run on a share-link page (templates/playground/share_link.html): the version shown,
// by reference (POST .../versions/<id>/run with the link's token, sent by api.js), for a
// signed-in holder: a run is metered to an account.

import { api, pageConfig, showAlert } from "./api.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();

async function run(e) {
  e.preventDefault();
  const variables = {};
  for (const input of document.querySelectorAll("#link-run-form [data-var]")) {
    if (input.value !== "") variables[input.dataset.var] = input.value;
  }
  const out = $("output");
  $("run-btn").disabled = true;
  showAlert($("run-error"), "");
  out.textContent = "Running…";
  try {
    const done = await api(`${cfg.apiBase}/versions/${cfg.versionId}/run`, { method: "POST", body: { variables } });
    const message = done.choices[0].message;
    out.textContent = message.content ?? JSON.stringify(message.tool_calls, null, 2);
    out.classList.remove("empty");
  } catch (err) {
    out.textContent = "";
    showAlert($("run-error"), `${err.message} (${err.code})`);
  } finally {
    $("run-btn").disabled = false;
  }
}

$("link-run-form").addEventListener("submit", run);
