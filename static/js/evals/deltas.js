// The history page's evaluation scores beside the diff: the "To" version against its parent,
// from the newest run with both (a pinned dataset runs each saved version beside its parent).
import { api, el, pageConfig } from "../playground/api.js";

const $ = (id) => document.getElementById(id);
const cfg = pageConfig();
const out = $("eval-deltas");
const sign = (x) => (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(2);
let timer = null, shown = null;

async function show() {
  const version = $("diff-to").value;
  if (!version) return;
  shown = version;
  clearTimeout(timer);
  let d;
  try {
    d = await api(`${cfg.apiBase}/versions/${version}/eval-deltas`);
  } catch (err) {
    out.replaceChildren(el("p", { class: "hint", text: `No scores: ${err.message}` }));
    return;
  }
  if (shown !== version) return;
  const pinned = d.pinned_dataset ? `pinned dataset: ${d.pinned_dataset.name}` : "no pinned dataset";
  if (!d.parent) { out.replaceChildren(el("p", { class: "hint", text: `Scores: this version has no parent (${pinned}).` })); return; }
  if (!d.run) {
    out.replaceChildren(el("p", { class: "hint", text: `Scores against its parent: no run has both yet (${pinned}; ` +
      "pin a dataset on its page to run each saved version)." }));
    return;
  }
  const name = $("diff-to").selectedOptions[0]?.textContent.split(" ")[0] || "This version";
  const head = el("p", { class: "hint" }, `Scores of ${name} against its parent on `,
    el("a", { href: d.run.url, text: `${d.run.dataset.name} v${d.run.dataset.version}` }), ` (${d.run.status})`);
  const scores = Object.entries(d.run.scores);
  if (d.run.status !== "done" || !scores.length) {
    out.replaceChildren(head, ...(d.run.status === "done" ? [el("p", { class: "hint", text: "The run scored nothing." })] : []));
    if (["queued", "running"].includes(d.run.status)) timer = setTimeout(show, 2000);
    return;
  }
  out.replaceChildren(head, el("ul", { class: "ev-deltas" }, ...scores.map(([key, s]) => el("li", {
    class: s.delta > 0 ? "up" : s.delta < 0 ? "down" : "same", "data-evaluator": key,
    text: `${key}: ${s.parent.toFixed(2)} → ${s.version.toFixed(2)} (${sign(s.delta)})` }))));
}

if (out && cfg.apiBase) {
  $("diff-to").addEventListener("change", show);
  $("diff-btn").addEventListener("click", show);
  // history.js fills the version pickers once it has loaded the versions.
  new MutationObserver(show).observe($("diff-to"), { childList: true });
  show();
}
