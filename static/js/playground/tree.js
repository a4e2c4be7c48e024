// The version tree as an SVG graph: one row per version (creation order), one
// lane per branch, edges from parent to child, label pills on their versions.

const NS = "http://www.w3.org/2000/svg";
const ROW = 34, LANE = 22, PAD = 18;

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// First child continues its parent's lane; every other child opens a new one.
function layout(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const lane = new Map();
  let lanes = 0;
  for (const n of nodes) { // nodes arrive in creation order: parents first
    if (!n.parent || !byId.has(n.parent)) { lane.set(n.id, lanes++); continue; }
    const siblings = byId.get(n.parent).children;
    lane.set(n.id, siblings[0] === n.id ? lane.get(n.parent) : lanes++);
  }
  return { lane, lanes: Math.max(lanes, 1) };
}

export function drawTree(root, nodes, { selected, compare, onSelect }) {
  const { lane, lanes } = layout(nodes);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const row = new Map(nodes.map((n, i) => [n.id, i]));
  const x = (id) => PAD + lane.get(id) * LANE, y = (id) => PAD + row.get(id) * ROW;
  const textX = PAD + lanes * LANE + 4;
  const width = Math.max(320, textX + 360), height = PAD * 2 + (nodes.length - 1) * ROW;
  const graph = svg("svg", { class: "tree", width, height, viewBox: `0 0 ${width} ${height}`,
                            role: "group", "aria-label": "Version tree" });
  for (const n of nodes) {
    if (!n.parent || !row.has(n.parent)) continue;
    const [x1, y1, x2, y2] = [x(n.parent), y(n.parent), x(n.id), y(n.id)];
    const d = x1 === x2 ? `M${x1},${y1} L${x2},${y2}` : `M${x1},${y1} C${x1},${y1 + ROW * 0.8} ${x2},${y1 + ROW * 0.2} ${x2},${Math.min(y2, y1 + ROW)} L${x2},${y2}`;
    graph.append(svg("path", { class: "edge", d }));
  }
  // A merge has a second parent: its edge joins the other branch into the merge node.
  for (const n of nodes) {
    if (!n.merge_parent || !row.has(n.merge_parent)) continue;
    const [x1, y1, x2, y2] = [x(n.merge_parent), y(n.merge_parent), x(n.id), y(n.id)];
    const d = `M${x1},${y1} C${x1},${y2 - ROW * 0.6} ${x2},${y2 - ROW * 0.4} ${x2},${y2}`;
    graph.append(svg("path", { class: "edge merge", d, "data-merge": `${n.merge_parent}>${n.id}` }));
  }
  for (const n of nodes) {
    const classes = ["node", n.id === selected ? "selected" : "", n.id === compare ? "compare" : ""].join(" ");
    const label = `Version ${n.number} on ${n.branch}${n.message ? ": " + n.message : ""}${n.labels.length ? ", labels " + n.labels.join(", ") : ""}`;
    const g = svg("g", { class: classes, tabindex: 0, role: "button", "aria-label": label, "data-version": n.id, "data-number": n.number,
                         "aria-pressed": n.id === selected ? "true" : "false" });
    // A full-width row behind the node: the whole line is the click target.
    g.append(svg("rect", { class: "hit", x: 0, y: y(n.id) - ROW / 2, width, height: ROW, fill: "transparent" }));
    g.append(svg("circle", { class: "ring", cx: x(n.id), cy: y(n.id), r: 10 }),
             svg("circle", { cx: x(n.id), cy: y(n.id), r: 6 }));
    let tx = textX;
    g.append(svg("text", { x: tx, y: y(n.id) + 4, "font-weight": 600 }, `v${n.number}`));
    tx += 34;
    for (const name of n.labels) {
      const w = 12 + name.length * 6.6;
      const pill = svg("g", { class: "lbl" });
      pill.append(svg("rect", { x: tx, y: y(n.id) - 9, width: w, height: 18, rx: 9 }),
                  svg("text", { x: tx + 6, y: y(n.id) + 4 }, name));
      g.append(pill);
      tx += w + 4;
    }
    // A branch's name where it starts (the root: main) and on its tips.
    const parent = n.parent && byId.get(n.parent);
    if (!parent || parent.branch !== n.branch || !n.children.length) {
      const text = `⎇ ${n.branch}`;
      g.append(svg("text", { class: "branch", x: tx, y: y(n.id) + 4, "data-branch": n.branch }, text));
      tx += 10 + text.length * 6.6;
    }
    const msg = (n.message || "(no message)").slice(0, 48);
    g.append(svg("text", { class: "msg", x: tx + 2, y: y(n.id) + 4 }, msg));
    g.append(svg("title", {}, label));
    g.addEventListener("click", (e) => onSelect(n.id, e.shiftKey));
    g.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onSelect(n.id, e.shiftKey); }
    });
    graph.append(g);
  }
  root.replaceChildren(graph);
}
