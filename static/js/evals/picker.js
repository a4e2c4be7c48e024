// The run form's evaluator picker: each evaluator with what it scores and what it needs.
// None is picked by default: a run with none stores the outputs and scores nothing.
import { el } from "../playground/api.js";

// The arguments the page asks for (the others keep their defaults; judge is set up through the API).
const ARGS = {
  contains: () => el("input", { type: "text", "data-arg": "value", placeholder: "text to find (default: the expected output)",
                                "aria-label": "contains: text to find" }),
  regex: () => el("input", { type: "text", "data-arg": "pattern", placeholder: "pattern (RE2), e.g. ^yes\\b",
                             "aria-label": "regex: pattern" }),
  json_schema: () => el("textarea", { "data-arg": "schema", rows: "3", placeholder: '{"type": "object", "required": ["answer"]}',
                                      "aria-label": "json_schema: schema" }),
  tool_calls: () => el("select", { "data-arg": "arguments", "aria-label": "tool_calls: arguments" },
    el("option", { value: "exact", text: "arguments must match exactly" }),
    el("option", { value: "subset", text: "extra arguments allowed" })),
};

// A doc's `names` as code.
const withCode = (text) => text.split("`").map((part, i) => (i % 2 ? el("code", { text: part }) : part));

export function evaluatorPicker({ container, note, evaluators,
                                 emptyNote = "No evaluator picked: the run stores each output and scores nothing." }) {
  const shown = evaluators.filter((e) => e.name !== "judge");
  container.replaceChildren(
    ...shown.map((e) => {
      const box = el("input", { type: "checkbox", value: e.name, id: `ev-${e.name}` });
      const args = ARGS[e.name] ? el("div", { class: "ev-args", hidden: true }, ARGS[e.name]()) : null;
      box.addEventListener("change", () => { if (args) args.hidden = !box.checked; describe(); });
      return el("div", { class: "ev-pick", "data-evaluator": e.name },
        el("label", { for: `ev-${e.name}` }, box, " ", el("strong", { text: e.name })),
        e.needs_expected ? el("span", { class: "badge muted", text: "needs expected",
                                        title: "A row without an expected output scores 0 on it" }) : null,
        el("p", { class: "hint ev-doc" }, ...withCode(e.doc)), args);
    }),
    el("p", { class: "hint", text: "judge (LLM-as-judge: a saved prompt version scores each output) is set up through the API." }));

  function picked() {
    return [...container.querySelectorAll(".ev-pick")].filter((d) => d.querySelector("input[type=checkbox]").checked);
  }
  function describe() {
    const names = picked().map((d) => d.dataset.evaluator);
    note.textContent = names.length ? `Scored by ${names.join(", ")}.` : emptyNote;
  }
  describe();

  // The run request's evaluators; throws an Error naming an argument that is missing or malformed.
  function specs() {
    return picked().map((d) => {
      const name = d.dataset.evaluator, args = {};
      for (const input of d.querySelectorAll("[data-arg]")) {
        const value = input.value.trim();
        if (!value) continue;
        if (input.dataset.arg === "schema") {
          try { args.schema = JSON.parse(value); } catch { throw new Error("json_schema: the schema is not JSON."); }
        } else args[input.dataset.arg] = value;
      }
      if (name === "regex" && !args.pattern) throw new Error("regex: give a pattern.");
      if (name === "json_schema" && !args.schema) throw new Error("json_schema: give a schema.");
      return Object.keys(args).length ? { name, args } : name;
    });
  }
  return { specs };
}
