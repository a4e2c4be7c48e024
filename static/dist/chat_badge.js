// static/js/chat_badge.js
var badge = document.getElementById("nav-chat-unread");
var EVERY = 3e4;
var SYNC = JSON.stringify({ type: "sync" });
var shown = null;
var signedOut = false;
var poller = null;
var ws = null;
var backoff = 1e3;
function setUnread(total) {
  if (!badge) return;
  badge.textContent = total > 99 ? "99+" : String(total);
  badge.hidden = total === 0;
  badge.setAttribute("aria-label", `${total} unread`);
  shown = total;
}
function show(total, from = null) {
  const grew = shown !== null && total > shown;
  setUnread(total);
  if (!grew || !document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
  const n = new Notification(from ? from.username : "Promptyard", {
    body: from ? `New message \xB7 ${total} unread` : `${total} unread message${total === 1 ? "" : "s"}`,
    tag: "chat-unread"
  });
  n.onclick = () => {
    window.focus();
    location.assign(from ? `/chat/?with=${encodeURIComponent(from.username)}` : "/chat/");
    n.close();
  };
}
async function refresh() {
  let res, total;
  try {
    res = await fetch("/api/chat/unread", { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (res.status === 401 || res.status === 403) {
      signedOut = true;
      stopPolling();
      return;
    }
    if (!res.ok) return;
    total = (await res.json()).total;
  } catch {
    return;
  }
  show(total);
}
function startPolling() {
  if (poller !== null || signedOut) return;
  refresh();
  poller = setInterval(refresh, EVERY);
}
function stopPolling() {
  clearInterval(poller);
  poller = null;
}
function connect() {
  if (signedOut) return;
  const sock = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/chat/unread/`);
  let last = Date.now(), keepalive = null;
  ws = sock;
  const opening = setTimeout(() => {
    sock.onclose = null;
    sock.close();
    lost();
  }, EVERY / 3);
  const lost = () => {
    clearTimeout(opening);
    clearInterval(keepalive);
    ws = null;
    startPolling();
    setTimeout(connect, backoff * (0.5 + Math.random() / 2));
    backoff = Math.min(backoff * 2, EVERY);
  };
  sock.onopen = () => {
    clearTimeout(opening);
    stopPolling();
    keepalive = setInterval(() => {
      if (Date.now() - last > 2.5 * EVERY) {
        sock.onclose = null;
        sock.close();
        lost();
        return;
      }
      sock.send(SYNC);
    }, EVERY);
  };
  sock.onmessage = (e) => {
    last = Date.now();
    backoff = 1e3;
    const f = JSON.parse(e.data);
    if (f.type === "unread") show(f.total, f.from);
  };
  sock.onclose = lost;
}
if (badge && !document.getElementById("chat")) {
  connect();
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) return;
    if (ws?.readyState === WebSocket.OPEN) ws.send(SYNC);
    else refresh();
  });
}
export {
  setUnread
};
