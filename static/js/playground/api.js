// Small fetch helpers for the REST API: session auth + CSRF, one error shape.

export class ApiError extends Error {
  constructor(status, body, retryAfter = null) {
    const err = (body && body.error) || {};
    super(err.message || `The server answered ${status}.`);
    this.status = status;
    this.code = err.code || (status === 0 ? "network_error" : "http_" + status);
    this.field = err.field || null;
    this.details = err; // the whole error object (extra fields: a gate's run link, figures...)
    this.retryAfter = retryAfter;
  }
}

export function csrfToken() {
  const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

export function pageConfig() {
  return JSON.parse(document.getElementById("page-config").textContent);
}

// A share-link page's calls carry its token (sharing.access reads X-Share-Token).
function shareToken() {
  const node = document.getElementById("page-config");
  return node ? JSON.parse(node.textContent).shareToken : undefined;
}

export function headers(extra = {}) {
  const token = shareToken();
  return { "X-CSRFToken": csrfToken(), "Accept": "application/json",
           ...(token ? { "X-Share-Token": token } : {}), ...extra };
}

// Turns any failed response into an ApiError carrying the server's message.
export async function errorFrom(res) {
  let body = null;
  try { body = await res.json(); } catch { /* not JSON: keep the status text */ }
  const retry = res.headers.get("Retry-After");
  return new ApiError(res.status, body, retry === null ? null : Number(retry));
}

export async function api(path, { method = "GET", body, signal } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method, signal, credentials: "same-origin",
      headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, { error: { message: "Could not reach the server. Check your connection and try again." } });
  }
  if (!res.ok) throw await errorFrom(res);
  return res.status === 204 ? null : res.json();
}

// Every page of a cursor-paginated list.
export async function apiAll(path) {
  const out = [];
  let next = path;
  while (next) {
    const page = await api(next);
    out.push(...page.results);
    next = page.next;
  }
  return out;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== false && v !== null && v !== undefined) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

export function showAlert(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// Resolves after the page's next frame: for requests the first paint need not wait for
// (their server time would take the cores the first layout needs on a small machine).
export function nextPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}
