// The run pane's reading of a finished run: the parsed object of a structured-output
// run (a tree, with whether it parses and validates against the schema), and the
// tool calls of a run with tools (each name, and its arguments checked against
// that function's parameters schema).

import { validate } from "./schema.js";

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

// A JSON value as nested, collapsible lists; scalars typed by class.
export function jsonTree(value, key = null) {
  const label = key === null ? [] : [el("span", { class: "jt-key" }, key), ": "];
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    const list = el("ul", {}, ...entries.map(([k, v]) => el("li", {}, jsonTree(v, k))));
    const details = el("details", { open: "" }, el("summary", {}, ...label, el("span", { class: "jt-count" },
      summary)), list);
    return details;
  }
  const kind = value === null ? "null" : typeof value;
  return el("span", { class: "jt-leaf" }, ...label, el("span", { class: `jt-${kind}` }, JSON.stringify(value)));
}

function status(ok, text) {
  return el("p", { class: `result-status ${ok ? "ok" : "bad"}`, "data-valid": String(ok) }, text);
}

function checked(schema, value, what) {
  const { errors, unchecked } = validate(schema, value);
  const nodes = [];
  if (errors.length) {
    nodes.push(status(false, `Does not match ${what}: ` +
      errors.slice(0, 3).map((e) => `${e.path || "(root)"}: ${e.message}`).join("; ")));
  } else {
    nodes.push(status(true, `Valid against ${what}`));
  }
  if (unchecked.length) nodes.push(el("p", { class: "hint" }, `Not checked here: ${unchecked.join(", ")}.`));
  return nodes;
}

// mode: "json_object" or "json_schema"; schema: the response schema (json_schema).
export function structuredResult(text, { mode, schema, finish }) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const why = finish === "length" ? " (cut by max tokens)" : "";
    return el("div", { class: "result", id: "parsed" }, el("h3", {}, "Parsed object"),
      status(false, `Not valid JSON${why}: ${err.message}`));
  }
  const verdict = mode === "json_schema" ? checked(schema, value, "the response schema")
    : [isObject(value) ? status(true, "Valid JSON object") : status(false, "Valid JSON, but not an object")];
  return el("div", { class: "result", id: "parsed" }, el("h3", {}, "Parsed object"), ...verdict,
    el("div", { class: "json-tree" }, jsonTree(value)));
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

// calls: [{id, function: {name, arguments}}]; tools: the request's tool definitions;
// onAnswer(results): the user's result for each call, to continue the conversation.
export function toolCallsResult(calls, tools, { onAnswer } = {}) {
  const byName = Object.fromEntries((tools || []).map((t) => [t.function.name, t.function]));
  const items = calls.map((call) => {
    const { name, arguments: raw } = call.function;
    const head = el("div", { class: "tool-head" }, el("code", { class: "tool-name" }, name),
      el("span", { class: "hint" }, call.id || ""));
    let args;
    try {
      args = JSON.parse(raw);
    } catch (err) {
      return el("li", { class: "tool-call" }, head, status(false, `Arguments are not JSON: ${err.message}`),
        el("pre", {}, raw));
    }
    const fn = byName[name];
    const verdict = fn ? checked(fn.parameters || {}, args, `${name}'s parameters`)
      : [status(false, `No tool named ${name} was offered`)];
    return el("li", { class: "tool-call" }, head, ...verdict, el("div", { class: "json-tree" }, jsonTree(args)));
  });
  const pane = el("div", { class: "result", id: "tool-calls" }, el("h3", {}, `Tool calls (${calls.length})`),
    el("ul", { class: "tool-list" }, ...items));
  if (onAnswer) {
    const answers = calls.map((call, i) => el("textarea", { class: "json-input tool-answer", rows: "2",
      id: `tool-answer-${i}`, "aria-label": `Result of ${call.function.name}`, spellcheck: "false",
      placeholder: `What ${call.function.name} returned (text, often JSON)` }));
    answers.forEach((answer, i) => items[i].append(answer));
    const send = el("button", { type: "button", class: "btn small", id: "tool-answer-send" },
      "Send the results to the model");
    send.addEventListener("click", () => onAnswer(answers.map((a) => a.value)));
    pane.append(send);
  }
  return pane;
}
