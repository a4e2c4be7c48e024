// static/js/playground/api.js
var ApiError = class extends Error {
  constructor(status, body, retryAfter = null) {
    const err = body && body.error || {};
    super(err.message || `The server answered ${status}.`);
    this.status = status;
    this.code = err.code || (status === 0 ? "network_error" : "http_" + status);
    this.field = err.field || null;
    this.details = err;
    this.retryAfter = retryAfter;
  }
};
function csrfToken() {
  const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}
function pageConfig() {
  return JSON.parse(document.getElementById("page-config").textContent);
}
function shareToken() {
  const node = document.getElementById("page-config");
  return node ? JSON.parse(node.textContent).shareToken : void 0;
}
function headers(extra = {}) {
  const token = shareToken();
  return {
    "X-CSRFToken": csrfToken(),
    "Accept": "application/json",
    ...token ? { "X-Share-Token": token } : {},
    ...extra
  };
}
async function errorFrom(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
  }
  const retry = res.headers.get("Retry-After");
  return new ApiError(res.status, body, retry === null ? null : Number(retry));
}
async function api(path, { method = "GET", body, signal } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      signal,
      credentials: "same-origin",
      headers: headers(body === void 0 ? {} : { "Content-Type": "application/json" }),
      body: body === void 0 ? void 0 : JSON.stringify(body)
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, { error: { message: "Could not reach the server. Check your connection and try again." } });
  }
  if (!res.ok) throw await errorFrom(res);
  return res.status === 204 ? null : res.json();
}
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== false && v !== null && v !== void 0) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== void 0) node.append(c);
  return node;
}
function showAlert(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// static/js/evals/picker.js
var ARGS = {
  contains: () => el("input", {
    type: "text",
    "data-arg": "value",
    placeholder: "text to find (default: the expected output)",
    "aria-label": "contains: text to find"
  }),
  regex: () => el("input", {
    type: "text",
    "data-arg": "pattern",
    placeholder: "pattern (RE2), e.g. ^yes\\b",
    "aria-label": "regex: pattern"
  }),
  json_schema: () => el("textarea", {
    "data-arg": "schema",
    rows: "3",
    placeholder: '{"type": "object", "required": ["answer"]}',
    "aria-label": "json_schema: schema"
  }),
  tool_calls: () => el(
    "select",
    { "data-arg": "arguments", "aria-label": "tool_calls: arguments" },
    el("option", { value: "exact", text: "arguments must match exactly" }),
    el("option", { value: "subset", text: "extra arguments allowed" })
  )
};
var withCode = (text) => text.split("`").map((part, i) => i % 2 ? el("code", { text: part }) : part);
function evaluatorPicker({
  container,
  note,
  evaluators,
  emptyNote = "No evaluator picked: the run stores each output and scores nothing."
}) {
  const shown = evaluators.filter((e) => e.name !== "judge");
  container.replaceChildren(
    ...shown.map((e) => {
      const box = el("input", { type: "checkbox", value: e.name, id: `ev-${e.name}` });
      const args = ARGS[e.name] ? el("div", { class: "ev-args", hidden: true }, ARGS[e.name]()) : null;
      box.addEventListener("change", () => {
        if (args) args.hidden = !box.checked;
        describe();
      });
      return el(
        "div",
        { class: "ev-pick", "data-evaluator": e.name },
        el("label", { for: `ev-${e.name}` }, box, " ", el("strong", { text: e.name })),
        e.needs_expected ? el("span", {
          class: "badge muted",
          text: "needs expected",
          title: "A row without an expected output scores 0 on it"
        }) : null,
        el("p", { class: "hint ev-doc" }, ...withCode(e.doc)),
        args
      );
    }),
    el("p", { class: "hint", text: "judge (LLM-as-judge: a saved prompt version scores each output) is set up through the API." })
  );
  function picked() {
    return [...container.querySelectorAll(".ev-pick")].filter((d) => d.querySelector("input[type=checkbox]").checked);
  }
  function describe() {
    const names = picked().map((d) => d.dataset.evaluator);
    note.textContent = names.length ? `Scored by ${names.join(", ")}.` : emptyNote;
  }
  describe();
  function specs() {
    return picked().map((d) => {
      const name = d.dataset.evaluator, args = {};
      for (const input of d.querySelectorAll("[data-arg]")) {
        const value = input.value.trim();
        if (!value) continue;
        if (input.dataset.arg === "schema") {
          try {
            args.schema = JSON.parse(value);
          } catch {
            throw new Error("json_schema: the schema is not JSON.");
          }
        } else args[input.dataset.arg] = value;
      }
      if (name === "regex" && !args.pattern) throw new Error("regex: give a pattern.");
      if (name === "json_schema" && !args.schema) throw new Error("json_schema: give a schema.");
      return Object.keys(args).length ? { name, args } : name;
    });
  }
  return { specs };
}

// static/js/evals/online.js
var $ = (id) => document.getElementById(id);
var cfg = pageConfig();
var base = `/api/prompts/${cfg.prompt}/online-evals`;
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
  const usable = evaluators.filter((e) => !e.needs_expected || e.name === "contains").map((e) => e.name === "contains" ? { ...e, needs_expected: false } : e);
  const picker = evaluatorPicker({
    container: $("evaluator-boxes"),
    note: $("evaluator-note"),
    evaluators: usable,
    emptyNote: "No evaluator picked."
  });
  const formError = $("online-form-error");
  $("online-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    showAlert(formError, "");
    try {
      const specs = picker.specs();
      if (!specs.length) throw new Error("Pick an evaluator.");
      if (specs.includes("contains")) throw new Error("contains: give the text to find.");
      const common = {
        sample_rate: Number($("online-rate").value) / 100,
        label: $("online-label").value.trim(),
        version: $("online-version").value || null
      };
      for (const evaluator of specs) await api(base, { method: "POST", body: { ...common, evaluator } });
      window.location.reload();
    } catch (err) {
      showAlert(formError, err.message);
    }
  });
}
if (cfg.canEdit) form().catch((err) => showAlert($("page-error"), err.message));
