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
function nextPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

// static/js/regression_alerts.js
var box = document.getElementById("regression-alerts");
var config = pageConfig();
var canAct = ["owner", "editor"].includes(config.role);
var base = `/api/prompts/${config.prompt.id}/alerts`;
var NAMES = { error_rate: "Error rate", latency_p95: "Latency p95", ttft_p50: "TTFT p50" };
function figure(check, value) {
  if (check === "error_rate") return `${(value * 100).toFixed(1)}%`;
  if (check.startsWith("score:")) return value.toFixed(3);
  return `${Math.round(value).toLocaleString("en")} ms`;
}
function line(a) {
  const name = NAMES[a.check] || `Score ${a.check.slice("score:".length)}`;
  const p = a.p_value < 1e-3 ? "p < 0.001" : `p = ${a.p_value.toFixed(3)}`;
  return `${name}: ${figure(a.check, a.value)} on v${a.version.number} against ${figure(a.check, a.previous_value)} on v${a.previous_version.number} (${a.count} vs ${a.previous_count} samples, ${p})`;
}
function settle(banner, text, ok) {
  banner.className = `alert ${ok ? "ok" : "err"} regression-alert`;
  banner.querySelector(".regression-actions")?.remove();
  banner.querySelector(".regression-note").textContent = text;
}
function render(alerts) {
  const groups = /* @__PURE__ */ new Map();
  for (const a of alerts) {
    const key = `${a.label} ${a.version.id}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(a);
  }
  box.replaceChildren(...[...groups.values()].map((group) => {
    const [first] = group;
    const label = first.label, back = first.previous_version.number;
    const note = el("p", {
      class: "regression-note",
      text: `Label ${label} moved to v${first.version.number}, which regressed:`
    });
    const banner = el(
      "div",
      { class: "alert err regression-alert", role: "alert" },
      note,
      el("ul", {}, ...group.map((a) => el("li", { text: line(a) })))
    );
    banner.dataset.label = label;
    if (canAct) {
      const rollback = el("button", {
        type: "button",
        class: "btn small primary",
        text: `Move ${label} back to v${back}`
      });
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
  await nextPaint();
  const page = await api(`${base}?status=open&page_size=50`);
  render(page.results);
}
load().catch(() => {
  box.hidden = true;
});
