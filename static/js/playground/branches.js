// Branches: the picker lists the tip of every branch (a branch edited twice from one
// version shows both tips, "diverged"); the save form may name a new branch.
import { api, nextPaint } from "./api.js";

const $ = (id) => document.getElementById(id);

export class BranchPicker {
  constructor(cfg) {
    this.cfg = cfg;
    this.select = $("branch-select");
    this.select?.addEventListener("change", () => {
      if (this.select.value) location.assign(`?v=${this.select.value}`);
    });
  }

  // The base's branch in the badge, then the tips in the picker (off the page's critical path).
  async show(base) {
    if (!this.select) return;
    $("branch-badge").textContent = base ? base.branch : "main";
    $("branch-badge").title = base ? `Saving continues branch ${base.branch} unless you name a new one` : "";
    const input = $("save-branch");
    if (input) input.placeholder = base ? `${base.branch} (continue)` : "main";
    if (!base) { this.select.hidden = true; return; }
    await nextPaint();
    const heads = (await api(`${this.cfg.apiBase}/heads?page_size=100`)).results;
    const seen = new Map();
    for (const h of heads) seen.set(h.branch, (seen.get(h.branch) || 0) + 1);
    const options = heads.map((h) => {
      const diverged = seen.get(h.branch) > 1 ? " (diverged)" : "";
      return new Option(`${h.branch} · v${h.number}${diverged}`, h.id, false, h.id === base.id);
    });
    if (!heads.some((h) => h.id === base.id)) {
      options.unshift(new Option(`${base.branch} · v${base.number} (not its tip)`, "", false, true));
    }
    this.select.replaceChildren(...options);
    this.select.hidden = false;
  }
}
