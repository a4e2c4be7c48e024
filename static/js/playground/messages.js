// The turns between the system text and the body (a version's `messages`):
// each a role and a template; an assistant turn may carry tool calls (JSON),
// a tool turn the id of the call it answers. Turns are added, removed and
// moved; every content editor highlights {{variables}} like the others.

import { el } from "./api.js";
import { HighlightedEditor } from "./editor.js";

const ROLES = ["user", "assistant", "tool", "system"];

export class MessagesEditor {
  constructor(root, onChange) {
    this.root = root;
    this.onChange = onChange;
    this.turns = []; // [{ role, editor, calls, callId, node }]
  }

  texts() { return this.turns.map((t) => t.editor.value); }

  // The turns as the API takes them; throws naming the turn when tool calls do not parse.
  get() {
    return this.turns.map((t, i) => {
      const out = { role: t.role.value, content: t.editor.value };
      if (out.role === "assistant" && t.calls.value.trim()) {
        try {
          out.tool_calls = JSON.parse(t.calls.value);
        } catch (err) {
          throw new Error(`Message ${i + 1}: its tool calls are not valid JSON: ${err.message}`);
        }
      }
      if (out.role === "tool") out.tool_call_id = t.callId.value;
      return out;
    });
  }

  // The turns as typed (a draft keeps tool calls that do not parse yet).
  raw() {
    return this.turns.map((t) => ({ role: t.role.value, content: t.editor.value, calls: t.calls.value,
                                    callId: t.callId.value }));
  }

  set(messages) {
    if (JSON.stringify(messages || []) === JSON.stringify(this.raw())) return; // unchanged: keep focus and caret
    this.turns = [];
    this.root.replaceChildren();
    for (const m of messages || []) this.add(m, { quiet: true });
    this.renumber();
  }

  add(m = { role: "user", content: "" }, { quiet = false, focus = false } = {}) {
    const turn = {};
    const n = this.turns.length + 1;
    turn.role = el("select", { "aria-label": `Role of message ${n}`, class: "role-select" },
      ...ROLES.map((r) => new Option(r, r)));
    turn.role.value = ROLES.includes(m.role) ? m.role : "user";
    const area = el("textarea", { class: "turn", spellcheck: "false", rows: 3,
                                  "aria-label": `Content of message ${n}` });
    const wrap = el("div", { class: "hl" }, el("pre", { "aria-hidden": "true" }), area);
    turn.calls = el("textarea", { class: "json-input", rows: 3, spellcheck: "false",
      "aria-label": `Tool calls of message ${n}`,
      placeholder: '[{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]' });
    turn.calls.value = m.calls ?? (m.tool_calls ? JSON.stringify(m.tool_calls, null, 2) : "");
    turn.callId = el("input", { "aria-label": `Tool call id of message ${n}`, placeholder: "call_1" });
    turn.callId.value = m.callId ?? m.tool_call_id ?? "";
    const callsRow = el("div", { class: "turn-extra" }, el("span", { class: "hint", text: "Tool calls (JSON, optional)" }),
                        turn.calls);
    const idRow = el("div", { class: "turn-extra" }, el("span", { class: "hint", text: "Answers the call" }), turn.callId);
    const button = (text, label, fn) => el("button", { type: "button", class: "btn small icon", text,
                                                        "aria-label": label, title: label, onclick: fn });
    turn.node = el("div", { class: "turn-row" },
      el("div", { class: "turn-head" }, turn.role,
        el("span", { class: "turn-tools" },
          button("↑", "Move up", () => this.move(turn, -1)),
          button("↓", "Move down", () => this.move(turn, 1)),
          button("✕", "Remove message", () => this.remove(turn)))),
      wrap, callsRow, idRow);
    const showExtra = () => {
      callsRow.hidden = turn.role.value !== "assistant";
      idRow.hidden = turn.role.value !== "tool";
    };
    turn.role.addEventListener("input", () => { showExtra(); this.onChange(); });
    turn.calls.addEventListener("input", this.onChange);
    turn.callId.addEventListener("input", this.onChange);
    showExtra();
    turn.editor = new HighlightedEditor(area, this.onChange);
    turn.editor.value = m.content ?? "";
    this.turns.push(turn);
    this.root.append(turn.node);
    if (!quiet) { this.renumber(); this.onChange(); }
    if (focus) area.focus();
    return turn;
  }

  remove(turn) {
    this.turns = this.turns.filter((t) => t !== turn);
    turn.node.remove();
    this.renumber();
    this.onChange();
  }

  move(turn, by) {
    const i = this.turns.indexOf(turn), j = i + by;
    if (j < 0 || j >= this.turns.length) return;
    [this.turns[i], this.turns[j]] = [this.turns[j], this.turns[i]];
    this.root.replaceChildren(...this.turns.map((t) => t.node));
    this.renumber();
    this.onChange();
  }

  renumber() {
    this.turns.forEach((t, i) => {
      t.node.dataset.index = String(i);
      t.role.setAttribute("aria-label", `Role of message ${i + 1}`);
      t.editor.textarea.setAttribute("aria-label", `Content of message ${i + 1}`);
    });
  }

  setReadOnly(ro) { for (const t of this.turns) t.editor.setReadOnly(ro); }
}
