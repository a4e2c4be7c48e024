// The unread count on the navigation bar's Chat link, on every page. The chat page
// keeps it live from its socket (setUnread); other pages ask the server on load,
// when the tab comes back, and every 30 s, and notify (opt-in, tab hidden) when it grows.
const badge = document.getElementById("nav-chat-unread");
let shown = null;

export function setUnread(total) {
  if (!badge) return;
  badge.textContent = total > 99 ? "99+" : String(total);
  badge.hidden = total === 0;
  badge.setAttribute("aria-label", `${total} unread`);
  shown = total;
}

async function refresh() {
  let total;
  try {
    const res = await fetch("/api/chat/unread", { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!res.ok) return;
    total = (await res.json()).total;
  } catch { return; }  // offline or navigating away: the next poll tries again
  const grew = shown !== null && total > shown;
  setUnread(total);
  if (grew && document.hidden && "Notification" in window && Notification.permission === "granted") {
    new Notification("Promptyard", { body: `${total} unread message${total === 1 ? "" : "s"}`, tag: "chat-unread" });
  }
}

if (badge && !document.getElementById("chat")) {
  refresh();
  setInterval(refresh, 30_000);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
}
