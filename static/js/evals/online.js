// A prompt's online evaluation rules: add (a rule per picked evaluator), pause or resume, delete.
// Everything goes through the REST API; the page reloads to show the result.
import { api, pageConfig, showAlert } from "../playground/api.js";
import { evaluatorPicker } from "./picker.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();
const base = `/api/prompts/${cfg.prompt}/online-evals`;

async function act(fn) {
  try {
    await fn();
    window.location.reload();
  } catch (err) {
    showAlert($("page-error"), err.message);
  }
}

document.addEventListener("change", (event) => {
  const id = event.target.dataset?.toggle;
  if (id) act(() => api(`${base}/${id}`, { method: "PATCH", body: { enabled: event.target.checked } }));
});
document.addEventListener("click", (event) => {
  const id = event.target.closest("[data-delete]")?.dataset.delete;
  if (id && window.confirm("Delete this rule and its scores?")) act(() => api(`${base}/${id}`, { method: "DELETE" }));
});

async function form() {
  const evaluators = await api("/api/evals/evaluators");
  // Production traffic has no expected output; contains stays, with its own text required.
  const usable = evaluators.filter((e) => !e.needs_expected || e.name === "contains")
    .map((e) => (e.name === "contains" ? { ...e, needs_expected: false } : e));
  const picker = evaluatorPicker({ container: $("evaluator-boxes"), note: $("evaluator-note"), evaluators: usable,
                                   emptyNote: "No evaluator picked." });
  const formError = $("online-form-error");
  $("online-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    showAlert(formError, "");
    try {
      const specs = picker.specs();
      if (!specs.length) throw new Error("Pick an evaluator.");
      if (specs.includes("contains")) throw new Error("contains: give the text to find.");
      const common = { sample_rate: Number($("online-rate").value) / 100, label: $("online-label").value.trim(),
                       version: $("online-version").value || null };
      for (const evaluator of specs) await api(base, { method: "POST", body: { ...common, evaluator } });
      window.location.reload();
    } catch (err) {
      showAlert(formError, err.message);
    }
  });
}

if (cfg.canEdit) form().catch((err) => showAlert($("page-error"), err.message));
