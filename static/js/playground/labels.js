// The history page's Labels panel: the labels table (version, last move,
// protection, gate, history), moves of the named label to the selected
// version, review requests and their decisions. What a role may do is the
// server's to enforce; the panel only offers it.

import { api, apiAll, el, showAlert } from "./api.js";

const $ = (id) => document.getElementById(id);
const when = (iso) => (iso ? new Date(iso).toLocaleString([], { dateStyle: "short", timeStyle: "short" }) : "—");
const enc = encodeURIComponent;

// ctx: { cfg, selected(): version id, vname(id): "v3", changed(): the tree reloads labels }
export function labelsPanel(ctx) {
  const { cfg } = ctx;
  const canEdit = cfg.role === "owner" || cfg.role === "editor";
  const isOwner = cfg.role === "owner";
  const labelUrl = (name) => `${cfg.apiBase}/labels/${enc(name)}`;
  let labels = new Map(); // name -> label
  let gates = new Map(); // label name -> gate
  let gateLabel = null; // the label the gate dialog edits

  function say(node, text, ...extra) { node.replaceChildren(text, ...extra); }

  // A refusal says what the server said, and its code (what the API documents).
  function refusal(err) { return `${err.message} (${err.code})`; }

  async function refresh() {
    const [list, gateList, reviews] = await Promise.all([
      apiAll(`${cfg.apiBase}/labels`), api(`${cfg.apiBase}/gates`),
      api(`${cfg.apiBase}/pending-moves?page_size=20`)]);
    labels = new Map(list.map((l) => [l.name, l]));
    gates = new Map(gateList.map((g) => [g.label, g]));
    $("label-names").replaceChildren(...[...labels.keys()].map((n) => el("option", { value: n })));
    renderLabels();
    renderReviews(reviews.results);
    await namedLabelChanged();
  }

  // ---- The labels table ---------------------------------------------------
  function protectionText(l) {
    return !l.protected ? "open" : l.require_approval ? "needs approval" : "protected";
  }

  function gateText(g) {
    return g ? `${g.dataset_name} · ${g.evaluator} · margin ${g.margin}` : "—";
  }

  function protectionPicker(l) {
    const pick = el("select", { class: "label-protect", "aria-label": `Protection of ${l.name}` },
      new Option("Open", "none"), new Option("Protected", "protected"),
      new Option("Needs approval", "approval"));
    pick.value = !l.protected ? "none" : l.require_approval ? "approval" : "protected";
    pick.addEventListener("change", () => act(l.name, `${l.name}: protection changed.`, () =>
      api(`${labelUrl(l.name)}/protect`, { method: "POST", body: {
        protected: pick.value !== "none", require_approval: pick.value === "approval" } })));
    return pick;
  }

  function actions(l) {
    if (!canEdit) return null;  // viewers: no actions column
    const cell = el("td", { class: "label-actions" });
    const button = (text, cls, onclick, title) => el("button", { type: "button", class: `btn small ${cls}`, text, title, onclick });
    cell.append(
      button(`Move to ${ctx.vname(ctx.selected())}`, "label-move-here", () => { $("label-name").value = l.name; move(); },
        "Move this label to the version selected in the tree"),
      button(gates.has(l.name) ? "Edit gate" : "Set gate", "label-gate", () => openGate(l.name)),
      button("Delete", "label-delete", () => remove(l)));
    return cell;
  }

  function historyRow(l) {
    const list = el("ol", { class: "label-history" });
    const more = el("details", { class: "label-more" }, el("summary", { text: `History of ${l.name}` }), list);
    more.addEventListener("toggle", async () => {
      if (!more.open) return;
      list.replaceChildren(el("li", { class: "hint", text: "Loading…" }));
      try {
        const moves = (await api(`${labelUrl(l.name)}/history?page_size=50`)).results;
        list.replaceChildren(...moves.map((m) => el("li", {},
          `${m.from_version ? ctx.vname(m.from_version) : "created"} → ${ctx.vname(m.to_version)} · ${m.kind}` +
          ` · ${m.actor || "—"} · ${when(m.created_at)}`)));
      } catch (err) {
        list.replaceChildren(el("li", { class: "error", text: err.message }));
      }
    });
    return el("tr", { class: "label-more-row", "data-history": l.name }, el("td", { colspan: 6 }, more));
  }

  function renderLabels() {
    const rows = [...labels.values()].flatMap((l) => [
      el("tr", { "data-label": l.name },
        el("td", {}, el("code", { text: l.name }), l.split ? el("span", { class: "hint", text: " split" }) : ""),
        el("td", { class: "label-version", text: l.split ? l.split.map((v) => `${ctx.vname(v.version)} ${v.weight}%`).join(", ") : ctx.vname(l.version) }),
        el("td", { class: "hint", text: l.moved_at ? `${l.moved_by || "—"}, ${when(l.moved_at)}` : "—" }),
        el("td", { class: "label-protection" }, isOwner ? protectionPicker(l) : protectionText(l)),
        el("td", { class: "label-gate-text", text: gateText(gates.get(l.name)) }),
        actions(l)),
      historyRow(l)]);
    $("labels-table").tBodies[0].replaceChildren(...(rows.length ? rows
      : [el("tr", {}, el("td", { colspan: 6, class: "hint", text: "No labels yet: name one above and move it to a version." }))]));
  }

  // ---- Acting on a label ---------------------------------------------------
  async function act(name, done, call) {
    const status = $("label-status");
    try {
      await call();
      await refresh();
      await ctx.changed();
      say(status, done);
    } catch (err) {
      say(status, `${name}: ${refusal(err)}`);
      if (err.status === 409) await refresh();
      else renderLabels();  // a picker that changed shows the label as it is again
    }
  }

  async function remove(l) {
    if (!window.confirm(`Delete label “${l.name}”? Clients that fetch it get label_not_found.`)) return;
    await act(l.name, `${l.name} deleted.`, () => api(`${labelUrl(l.name)}?expected=${l.version}`, { method: "DELETE" }));
  }

  async function move(kind = "move") {
    const name = $("label-name").value.trim();
    const status = $("label-status");
    if (!name) { say(status, "Name the label first."); return; }
    const current = labels.get(name)?.version ?? null;
    const run = $("label-eval").value;
    const query = kind === "move" && run ? `?require_eval=${enc(run)}` : "";
    const body = kind === "move" ? { version: ctx.selected(), expected: current } : { expected: current };
    try {
      const label = await api(`${labelUrl(name)}/${kind}${query}`, { method: "POST", body });
      await refresh();
      await ctx.changed();
      say(status, label.pending  // approval required: the move became a review request
        ? `${name}: move to ${ctx.vname(label.pending.to_version)} requested; another editor approves it below.`
        : `${name} → ${ctx.vname(label.version)} (${kind === "move" ? "moved" : kind + " done"})`);
    } catch (err) {
      if (err.code.startsWith("eval_")) {  // the gate refused: say why, link the run
        const next = err.code === "eval_required" ? "Pick a passing run, or request a review (its reviewer picks or starts one). " : "";
        say(status, `Refused by the gate: ${refusal(err)} ${next}`,
          err.details.run_url ? el("a", { href: err.details.run_url, id: "gate-run-link", text: "Open the run" }) : "");
        await loadGate();
        return;
      }
      // 409 label_conflict: someone else moved it; the refresh shows where it is now.
      say(status, `Refused: ${refusal(err)}${err.status === 409 ? " The table now shows where it points." : ""}`);
      if (err.status === 409) { await refresh(); await ctx.changed(); }
    }
  }

  async function requestReview() {
    const name = $("label-name").value.trim();
    const status = $("label-status");
    const label = labels.get(name);
    if (!label) { say(status, `No label “${name}” yet: move it once first, then request reviews of its moves.`); return; }
    try {
      const pending = await api(`${labelUrl(name)}/pending`, { method: "POST", body: {
        version: ctx.selected(), expected: label.version, note: $("review-note").value.trim() } });
      $("review-note").value = "";
      await refresh();
      say(status, `Review requested: ${name} → ${ctx.vname(pending.to_version)}. Another editor approves or rejects it below.`);
    } catch (err) {
      say(status, `Could not request the review: ${refusal(err)}`);
    }
  }

  // ---- Runs that can pass a gate -----------------------------------------
  async function runOptions(select, name, version) {
    const runs = await api(`${labelUrl(name)}/gate/runs?version=${version}`);
    select.replaceChildren(new Option(runs.length ? "Pick a run…" : `No run of ${ctx.vname(version)} yet`, ""),
      ...runs.map((r) => {
        const option = new Option(`${r.passed ? "✓ passes" : "✗ " + r.code} · ${r.name || "run"} by ${r.owner}, ${when(r.created_at)}`, r.id);
        option.title = r.reason;
        return option;
      }));
    const passing = runs.find((r) => r.passed);
    if (passing) select.value = passing.id;
    return runs;
  }

  // Reload a review's runs until the one started from it has ended (or the row is gone).
  async function followRun(select, p, id) {
    for (let polls = 0; polls < 400 && select.isConnected; polls++) {
      const mine = (await runOptions(select, p.label, p.to_version)).find((r) => r.id === id);
      if (!mine || mine.status === "done" || mine.status === "cancelled") return;
      await new Promise((resolve) => { setTimeout(resolve, 1500); });
    }
  }

  // The form's label: its gate (decisions, and the runs of the selected version).
  async function namedLabelChanged() {
    const name = $("label-name").value.trim();
    const gated = gates.has(name);
    $("label-eval-box").hidden = !gated;
    $("label-move").textContent = `Move to ${ctx.vname(ctx.selected())}`;
    $("review-request").disabled = !labels.has(name);
    if (gated && canEdit) await runOptions($("label-eval"), name, ctx.selected());
    else $("label-eval").replaceChildren();
    await loadGate();
  }

  async function loadGate() {
    const name = $("label-name").value.trim();
    const view = $("gate-view");
    const gate = gates.get(name);
    if (!name || !gate) { view.replaceChildren(); return; }
    const decisions = (await api(`${labelUrl(name)}/gate/decisions?page_size=5`)).results;
    view.replaceChildren(
      el("p", { class: "hint", text: `“${name}” moves only behind a passing run over ${gate.dataset_name} (${gate.evaluator}, margin ${gate.margin}).` }),
      el("ul", { id: "gate-decisions" }, ...decisions.map((d) => el("li", { class: d.passed ? "ok" : "error" },
        `${d.passed ? "✓" : "✗"} ${d.code}: ${d.reason} `, d.run_url ? el("a", { href: d.run_url, text: "run" }) : ""))));
  }

  // ---- Review requests -----------------------------------------------------
  // What a reviewer decides with, in a row under the request: on a gated label,
  // a passing run of the target version (picked from its runs, or started here).
  function decideRow(p) {
    const box = el("div", { class: "review-decide" });
    const error = el("p", { class: "error review-error", role: "alert", hidden: true });
    const reason = el("input", { class: "review-reason", maxlength: 500, placeholder: "reason (optional)", "aria-label": "Reason" });
    const run = el("select", { class: "review-run", id: `review-run-${p.id}` });
    const decide = async (verdict) => {
      try {
        await api(`${labelUrl(p.label)}/pending/${p.id}/${verdict}`, { method: "POST", body: {
          reason: reason.value.trim(), ...(verdict === "approve" && run.value ? { eval_run: run.value } : {}) } });
        await refresh();
        await ctx.changed();
        say($("label-status"), `${p.label}: move to ${ctx.vname(p.to_version)} ${verdict === "approve" ? "approved" : "rejected"}.`);
      } catch (err) {
        showAlert(error, `Not ${verdict === "approve" ? "approved" : "rejected"}: ${refusal(err)}`);
      }
    };
    const gate = gates.get(p.label);
    if (gate) {
      const started = el("span", { class: "hint review-started" });
      const start = el("button", { type: "button", class: "btn small review-start", text: "Start a run", onclick: async () => {
        try {
          const made = await api(`${labelUrl(p.label)}/gate/runs`, { method: "POST", body: { version: p.to_version } });
          showAlert(error, "");
          started.replaceChildren("Run started (", el("a", { href: made.url, text: "open it" }), "); the list updates when it ends.");
          await followRun(run, p, made.id);
        } catch (err) { showAlert(error, `Could not start a run: ${refusal(err)}`); }
      } });
      const reload = el("button", { type: "button", class: "btn small", text: "↻", title: "Reload the runs", "aria-label": "Reload the runs",
        onclick: () => runOptions(run, p.label, p.to_version).catch((err) => showAlert(error, err.message)) });
      box.append(el("div", { class: "review-runs" },
        el("label", { for: run.id, text: `Passing run of ${ctx.vname(p.to_version)} over ${gate.dataset_name}` }),
        el("div", { class: "review-line" }, run, reload, start), started));
      runOptions(run, p.label, p.to_version).catch((err) => showAlert(error, err.message));
    }
    box.append(el("div", { class: "review-line" }, reason,
      el("button", { type: "button", class: "btn small primary review-approve", text: "Approve", onclick: () => decide("approve") }),
      el("button", { type: "button", class: "btn small review-reject", text: "Reject", onclick: () => decide("reject") })),
    error);
    return el("tr", { class: "review-decide-row", "data-decide": p.id }, el("td", { colspan: 5 }, box));
  }

  function reviewStatus(p) {
    if (p.status === "pending") return p.requested_by === cfg.user ? "pending · awaiting another editor" : "pending";
    return p.status + (p.decided_by ? ` by ${p.decided_by}` : "") + (p.reason ? `: ${p.reason}` : "");
  }

  function renderReviews(reviews) {
    const rows = reviews.flatMap((p) => [el("tr", { "data-pending": p.id, "data-status": p.status },
      el("td", {}, el("code", { text: p.label })),
      el("td", { text: `${p.from_version ? ctx.vname(p.from_version) : "—"} → ${ctx.vname(p.to_version)}` }),
      el("td", { class: "review-note", text: p.note || "—" }),
      el("td", { class: "hint", text: `${p.requested_by || "—"}, ${when(p.created_at)}` }),
      el("td", { class: "review-status", text: reviewStatus(p) })),
    ...(p.status === "pending" && canEdit && p.requested_by !== cfg.user ? [decideRow(p)] : [])]);
    $("reviews-table").tBodies[0].replaceChildren(...(rows.length ? rows
      : [el("tr", {}, el("td", { colspan: 5, class: "hint", text: "No review requests." }))]));
  }

  // ---- The gate dialog -------------------------------------------------------
  async function openGate(name) {
    gateLabel = name;
    const gate = gates.get(name);
    $("gate-title").textContent = `Gate of “${name}”`;
    showAlert($("gate-error"), "");
    $("gate-clear").hidden = !gate;
    const [datasets, evaluators] = await Promise.all([apiAll("/api/datasets/?page_size=100"), api("/api/evals/evaluators")]);
    $("gate-dataset").replaceChildren(...(datasets.length ? datasets.map((d) => new Option(d.name, d.id))
      : [new Option("No dataset yet: create one under Evaluations", "")]));
    $("gate-evaluators").replaceChildren(...evaluators.map((e) => el("option", { value: e.name })));
    if (gate) {
      $("gate-dataset").value = gate.dataset;
      $("gate-evaluator").value = gate.evaluator;
      $("gate-margin").value = gate.margin;
    }
    $("gate-dialog").showModal();
  }

  async function gateCall(call) {
    try {
      await call();
      $("gate-dialog").close();
      await refresh();
    } catch (err) {
      showAlert($("gate-error"), refusal(err));
    }
  }

  // ---- Wiring ----------------------------------------------------------------
  $("label-form").hidden = !canEdit;
  $("labels-table").tHead.rows[0].lastElementChild.hidden = !canEdit;
  $("labels-role").textContent = canEdit ? "" : `read-only (${cfg.role})`;
  $("label-form").addEventListener("submit", (e) => { e.preventDefault(); move(); });
  $("label-undo").addEventListener("click", () => move("undo"));
  $("label-redo").addEventListener("click", () => move("redo"));
  $("review-request").addEventListener("click", requestReview);
  $("label-name").addEventListener("change", () => namedLabelChanged().catch(ctx.fail));
  $("gate-form").addEventListener("submit", (e) => {
    e.preventDefault();
    gateCall(() => api(`${labelUrl(gateLabel)}/gate`, { method: "PUT", body: {
      dataset: $("gate-dataset").value, evaluator: $("gate-evaluator").value.trim(), margin: Number($("gate-margin").value) } }));
  });
  $("gate-clear").addEventListener("click", () => gateCall(() => api(`${labelUrl(gateLabel)}/gate`, { method: "DELETE" })));
  $("gate-close").addEventListener("click", () => $("gate-dialog").close());

  // The tree's selection moved: the move buttons and the runs follow it.
  function selectionChanged() {
    renderLabels();
    return namedLabelChanged();
  }

  return { refresh, selectionChanged };
}
