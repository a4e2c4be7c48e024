// "Save as test case": after a playground run, add its variables and output
// (as the expected output) to a dataset, as a new dataset version.
import { api, el } from "../playground/api.js";

const $ = (id) => document.getElementById(id);
let last = null, loaded = false;

async function loadDatasets() {
  const page = await api("/api/datasets/?page_size=200");
  $("case-dataset").replaceChildren(...(page.results.length
    ? page.results.map((d) => el("option", { value: d.id, text: d.name }))
    : [el("option", { value: "", text: "No datasets yet (create one under Evals)" })]));
  loaded = true;
}

export function offerTestCase({ variables, output }) {
  last = { variables, output };
  $("case-form").hidden = false;
  $("case-status").textContent = "";
  if (!loaded) loadDatasets().catch((err) => { $("case-status").textContent = err.message; });
}

export function setUpTestCases() {
  $("case-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const id = $("case-dataset").value;
    if (!id || !last) return;
    try {
      const dataset = await api(`/api/datasets/${id}`);
      const version = await api(`/api/datasets/${id}/versions`, { method: "POST", body: {
        base: dataset.latest_version, message: "saved from the playground",
        add: [{ variables: last.variables, expected: last.output }] } });
      $("case-status").textContent = `Saved as row ${version.row_count} of version ${version.number}.`;
    } catch (err) {
      $("case-status").textContent = `Could not save: ${err.message}`;
    }
  });
}
