// The unread count on the navigation bar's Chat link, on every page. The chat page
// keeps it live from its own socket (setUnread). Every other signed-in page opens the
// badge socket (/ws/chat/unread/, chat.unread.UnreadConsumer), which pushes the
// total whenever it changes; while that socket cannot be had, the page asks
// /api/chat/unread every 30 s instead. Either way, a total that grows while the tab
// is hidden notifies (opt-in: the chat page asks for the permission).
const badge = document.getElementById("nav-chat-unread");
const EVERY = 30_000;  // the fallback poll's period, and the socket's keepalive
const SYNC = JSON.stringify({ type: "sync" });
let shown = null;
let signedOut = false;
let poller = null;
let ws = null;
let backoff = 1000;

export function setUnread(total) {
  if (!badge) return;
  badge.textContent = total > 99 ? "99+" : String(total);
  badge.hidden = total === 0;
  badge.setAttribute("aria-label", `${total} unread`);
  shown = total;
}

// The title names the sender when the socket said who; the body never quotes the
// message: a system notification outlives the page (lock screen, notification
// centre) and cannot follow a later edit or deletion, and this socket carries no
// message text at all (the chat page, which has the text, shows a snippet).
function show(total, from = null) {
  const grew = shown !== null && total > shown;
  setUnread(total);
  if (!grew || !document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
  const n = new Notification(from ? from.username : "Promptyard", {
    body: from ? `New message · ${total} unread` : `${total} unread message${total === 1 ? "" : "s"}`,
    tag: "chat-unread",
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
    if (res.status === 401 || res.status === 403) { signedOut = true; stopPolling(); return; }  // nothing to count
    if (!res.ok) return;
    total = (await res.json()).total;
  } catch { return; }  // offline, or the server is restarting: the next poll tries again
  show(total);
}

function startPolling() {
  if (poller !== null || signedOut) return;
  refresh();
  poller = setInterval(refresh, EVERY);
}
function stopPolling() { clearInterval(poller); poller = null; }

function connect() {
  if (signedOut) return;
  const sock = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/chat/unread/`);
  let last = Date.now(), keepalive = null;
  ws = sock;
  // A handshake that hangs (a server going down or not up yet) fires no close for
  // minutes: give up on it so the backoff goes on.
  const opening = setTimeout(() => { sock.onclose = null; sock.close(); lost(); }, EVERY / 3);
  const lost = () => {
    clearTimeout(opening);
    clearInterval(keepalive);
    ws = null;
    startPolling();
    // Jitter: the tabs of a restarted server's users do not all come back at one instant.
    setTimeout(connect, backoff * (0.5 + Math.random() / 2));
    backoff = Math.min(backoff * 2, EVERY);
  };
  sock.onopen = () => {
    clearTimeout(opening);
    stopPolling();
    keepalive = setInterval(() => {
      // A connection that went silent never closes by itself: after 2.5 keepalives
      // without an answer, drop it; the next socket starts from the stored total.
      if (Date.now() - last > 2.5 * EVERY) { sock.onclose = null; sock.close(); lost(); return; }
      sock.send(SYNC);
    }, EVERY);
  };
  sock.onmessage = (e) => {
    last = Date.now();
    backoff = 1000;  // reset on a frame, not on open: a server that accepts and drops is retried slowly
    const f = JSON.parse(e.data);
    if (f.type === "unread") show(f.total, f.from);
  };
  sock.onclose = lost;
}

if (badge && !document.getElementById("chat")) {
  connect();
  // Back to the tab: the total afresh (also mends a push the channel layer lost).
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) return;
    if (ws?.readyState === WebSocket.OPEN) ws.send(SYNC); else refresh();
  });
}
