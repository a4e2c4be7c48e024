// The regression alarm's banner (generations/regression.py), on the version's
// generations page and the prompt's playground: one banner per label and
// version with open alerts, what regressed beside the previous version, and
// for editors "Move <label> back to v<N>" (one POST) and "Dismiss".
import { api, el, nextPaint, pageConfig } from "./playground/api.js";

const box = document.getElementById("regression-alerts");
const config = pageConfig();
const canAct = ["owner", "editor"].includes(config.role);
const base = `/api/prompts/${config.prompt.id}/alerts`;

const NAMES = { error_rate: "Error rate", latency_p95: "Latency p95", ttft_p50: "TTFT p50" };

function figure(check, value) {
  if (check === "error_rate") return `${(value * 100).toFixed(1)}%`;
  if (check.startsWith("score:")) return value.toFixed(3);
  return `${Math.round(value).toLocaleString("en")} ms`;
}

function line(a) {
  const name = NAMES[a.check] || `Score ${a.check.slice("score:".length)}`;
  const p = a.p_value < 0.001 ? "p < 0.001" : `p = ${a.p_value.toFixed(3)}`;
  return `${name}: ${figure(a.check, a.value)} on v${a.version.number} against `
    + `${figure(a.check, a.previous_value)} on v${a.previous_version.number} `
    + `(${a.count} vs ${a.previous_count} samples, ${p})`;
}

function settle(banner, text, ok) {
  banner.className = `alert ${ok ? "ok" : "err"} regression-alert`;
  banner.querySelector(".regression-actions")?.remove();
  banner.querySelector(".regression-note").textContent = text;
}

function render(alerts) {
  const groups = new Map();
  for (const a of alerts) {
    const key = `${a.label} ${a.version.id}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(a);
  }
  box.replaceChildren(...[...groups.values()].map((group) => {
    const [first] = group;
    const label = first.label, back = first.previous_version.number;
    const note = el("p", { class: "regression-note",
      text: `Label ${label} moved to v${first.version.number}, which regressed:` });
    const banner = el("div", { class: "alert err regression-alert", role: "alert" }, note,
      el("ul", {}, ...group.map((a) => el("li", { text: line(a) }))));
    banner.dataset.label = label;
    if (canAct) {
      const rollback = el("button", { type: "button", class: "btn small primary",
        text: `Move ${label} back to v${back}` });
      const dismiss = el("button", { type: "button", class: "btn small", text: "Dismiss" });
      rollback.addEventListener("click", async () => {
        rollback.disabled = dismiss.disabled = true;
        try {
          await api(`${base}/${first.id}/rollback`, { method: "POST" });
          settle(banner, `Rolled back: ${label} points at v${back} again.`, true);
        } catch (err) {
          note.textContent = `Could not move ${label} back: ${err.message}`;
          rollback.disabled = dismiss.disabled = false;
        }
      });
      dismiss.addEventListener("click", async () => {
        rollback.disabled = dismiss.disabled = true;
        try {
          for (const a of group) await api(`${base}/${a.id}/dismiss`, { method: "POST" });
          settle(banner, `Dismissed: ${label} stays on v${first.version.number}.`, true);
        } catch (err) {
          note.textContent = `Could not dismiss: ${err.message}`;
          rollback.disabled = dismiss.disabled = false;
        }
      });
      banner.append(el("div", { class: "regression-actions" }, rollback, dismiss));
    } else {
      banner.append(el("p", { class: "hint", text: `An editor of this prompt can move ${label} back to v${back}.` }));
    }
    return banner;
  }));
  box.hidden = !alerts.length;
}

async function load() {
  await nextPaint(); // the banner comes after the page's first paint
  const page = await api(`${base}?status=open&page_size=50`);
  render(page.results);
}

load().catch(() => { box.hidden = true; });
