// A read-only viewer for very long text: only the lines in view are in the DOM.

import { el } from "./api.js";

const LINE_PX = 20;

export function virtualText(text) {
  const lines = text.split("\n");
  const box = el("div", { class: "virt", tabindex: 0, role: "region", "aria-label": `Body, ${lines.length} lines` });
  const spacer = el("div", { class: "spacer" });
  spacer.style.height = lines.length * LINE_PX + "px";
  box.append(spacer);
  let frame = 0;
  const paint = () => {
    frame = 0;
    const first = Math.max(0, Math.floor(box.scrollTop / LINE_PX) - 20);
    const last = Math.min(lines.length, first + Math.ceil(box.clientHeight / LINE_PX) + 40);
    const rows = [];
    for (let i = first; i < last; i++) {
      const row = el("div", { class: "line" }, el("span", { class: "ln", text: String(i + 1) }), lines[i].slice(0, 2000));
      row.style.top = i * LINE_PX + "px";
      rows.push(row);
    }
    spacer.replaceChildren(...rows);
  };
  box.addEventListener("scroll", () => { if (!frame) frame = requestAnimationFrame(paint); });
  requestAnimationFrame(paint);
  return box;
}
