// The version's generations page: "Add to dataset" opens a dialog with the
// generation's output as the editable expected output; one POST adds the row.
import { api, el, showAlert } from "./playground/api.js";

const $ = (id) => document.getElementById(id);
let current = null, datasetsLoaded = false;

async function loadDatasets() {
  const page = await api("/api/datasets/?page_size=200");
  $("case-dataset").replaceChildren(...(page.results.length
    ? page.results.map((d) => el("option", { value: d.id, text: d.name }))
    : [el("option", { value: "", text: "No datasets yet (create one under Evals)" })]));
  datasetsLoaded = true;
}

async function open(id) {
  current = id;
  $("case-status").textContent = "Loading…";
  $("case-expected").value = "";
  $("case-dialog").showModal();
  try {
    const [generation] = await Promise.all([api(`/api/generations/${id}`),
      datasetsLoaded ? null : loadDatasets()]);
    // A large output's row holds its head: the whole one is a separate read.
    const output = generation.output_url
      ? await (await fetch(generation.output_url, { credentials: "same-origin" })).text()
      : generation.output;
    $("case-expected").value = output;
    const names = Object.keys(generation.variables);
    $("case-vars").textContent = names.length ? `Inputs: ${names.join(", ")}` : "No variables.";
    $("case-status").textContent = "";
  } catch (err) {
    $("case-status").textContent = err.message;
  }
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-add-case]");
  if (button) open(button.dataset.addCase);
});
$("case-close").addEventListener("click", () => $("case-dialog").close());
$("case-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const dataset = $("case-dataset").value;
  if (!dataset || current === null) return;
  try {
    const version = await api(`/api/generations/${current}/test-case`, { method: "POST",
      body: { dataset_id: dataset, expected: $("case-expected").value } });
    $("case-status").textContent = `Added as row ${version.row_count} of dataset version ${version.number}.`;
  } catch (err) {
    $("case-status").textContent = `Could not add: ${err.message}`;
    showAlert($("gen-error"), "");
  }
});
