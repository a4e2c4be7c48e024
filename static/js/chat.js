// Chat page: conversation list, history on scroll-up, live socket with catch-up.
// Message bodies are text: they only ever reach the DOM through textContent.
const root = document.getElementById("chat");
const me = Number(root.dataset.userId);
const $ = (id) => document.getElementById(id);
const cursorKey = `chat.cursor.${me}`;
const state = {
  ws: null, backoff: 500, heartbeat: null, convs: new Map(), current: null,
  cursor: Number(localStorage.getItem(cursorKey) || 0), pending: new Map(), lastTyping: 0,
  typingTimer: null, oldest: null, loadingOlder: false,
  // Presence by user id: a presence frame may arrive before its conversation is listed.
  online: new Map(),
};

function csrf() {
  const m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}
async function api(path, options = {}) {
  const res = await fetch(`/api/chat/${path}`, {
    credentials: "same-origin", ...options,
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrf(), ...(options.headers || {}) },
  });
  const data = res.status === 204 ? null : await res.json();
  if (!res.ok) throw new Error(data?.error?.message || res.statusText);
  return data;
}

// Links: only http(s) URLs become anchors, built as elements (never innerHTML).
const URL_RE = /\bhttps?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;
function renderBody(el, text) {
  let last = 0;
  for (const match of text.matchAll(URL_RE)) {
    el.append(document.createTextNode(text.slice(last, match.index)));
    const a = document.createElement("a");
    a.href = match[0]; a.textContent = match[0];
    a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
    el.append(a);
    last = match.index + match[0].length;
  }
  el.append(document.createTextNode(text.slice(last)));
}

function convRow(conv) {
  let li = document.querySelector(`li[data-conv="${conv.id}"]`);
  if (!li) {
    li = document.createElement("li");
    li.dataset.conv = conv.id;
    const b = document.createElement("button");
    b.innerHTML = '<span class="chat-dot"></span><span class="chat-name"></span><span class="chat-unread"></span>';
    b.addEventListener("click", () => openConversation(conv.id));
    li.append(b);
    $("chat-conversations").append(li);
  }
  li.querySelector(".chat-name").textContent = conv.peer.username;
  li.querySelector(".chat-unread").textContent = conv.unread ? String(conv.unread) : "";
  const online = !!state.online.get(conv.peer.id);
  li.querySelector(".chat-dot").classList.toggle("online", online);
  li.querySelector(".chat-dot").title = online ? "online" : "offline";
  li.querySelector("button").setAttribute("aria-current", String(state.current === conv.id));
  return li;
}

async function loadConversations() {
  const data = await api("conversations");
  for (const c of data.results) {
    state.convs.set(c.id, c);
    convRow(c);
  }
}

function messageItem(m) {
  const li = document.createElement("li");
  li.dataset.seq = m.seq ?? "";
  li.classList.toggle("mine", m.sender === me);
  renderBody(li, m.body);
  if (m.sender === me) {
    const r = document.createElement("span");
    r.className = "chat-receipt";
    li.append(r);
  }
  return li;
}

function showReceipts(conv) {
  for (const li of $("chat-messages").querySelectorAll("li.mine")) {
    const seq = Number(li.dataset.seq);
    li.querySelector(".chat-receipt").textContent = seq && seq <= conv.peer_read_upto ? "Read" : (seq ? "Sent" : "Sending…");
  }
}

async function openConversation(id) {
  state.current = id;
  const conv = state.convs.get(id);
  $("chat-peer").textContent = conv.peer.username;
  $("chat-form").hidden = false;
  $("chat-messages").replaceChildren();
  state.oldest = null;
  for (const c of state.convs.values()) convRow(c);
  await loadOlder();
  const box = $("chat-messages");
  box.scrollTop = box.scrollHeight;
  markRead(conv);
}

async function loadOlder() {
  if (state.loadingOlder || state.oldest === 0 || state.current == null) return;
  state.loadingOlder = true;
  const conv = state.convs.get(state.current);
  if (conv.fresh) { state.oldest = 0; state.loadingOlder = false; return; }  // nothing stored yet
  const q = state.oldest ? `?before=${state.oldest}` : "";
  try {
    const data = await api(`conversations/${conv.id}/messages${q}`);
    const box = $("chat-messages");
    const height = box.scrollHeight;
    box.prepend(...data.results.slice().reverse().map(messageItem));
    box.scrollTop += box.scrollHeight - height;  // keep the reader's place
    state.oldest = data.next_before ?? 0;
    conv.peer_read_upto = data.peer_read_upto;
    showReceipts(conv);
  } finally {
    state.loadingOlder = false;
  }
}

function markRead(conv) {
  if (!conv.unread || document.hidden) return;
  send({ type: "read", conversation: conv.id, upto: conv.last_seq });
  conv.unread = 0;
  convRow(conv);
}

function send(frame) {
  if (state.ws?.readyState === WebSocket.OPEN) { state.ws.send(JSON.stringify(frame)); return true; }
  return false;
}

function onMessage(m) {
  let conv = state.convs.get(m.conversation);
  if (!conv) { loadConversations(); return; }
  conv.last_seq = Math.max(conv.last_seq, m.seq);
  if (m.sender !== me) conv.unread = (conv.unread || 0) + 1;
  if (state.current === m.conversation) {
    if (m.sender !== me) { clearTimeout(state.typingTimer); $("chat-typing").textContent = ""; }
    const box = $("chat-messages");
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    const mine = m.sender === me && box.querySelector(`li[data-client="${CSS.escape(m.client_msg_id)}"]`);
    if (mine) { mine.dataset.seq = m.seq; mine.classList.remove("pending"); }
    else if (!box.querySelector(`li[data-seq="${m.seq}"]`)) box.append(messageItem(m));
    if (atBottom) box.scrollTop = box.scrollHeight;
    showReceipts(conv);
    markRead(conv);
  }
  convRow(conv);
}

const handlers = {
  welcome(f) {
    clearInterval(state.heartbeat);
    const ws = state.ws, every = f.heartbeat_seconds * 1000;
    state.heartbeat = setInterval(() => {
      // A stalled connection (no frame, not even heartbeat_ok, for 2.5 beats) never
      // closes by itself: drop it and reconnect; the cursor and resends cover the rest.
      if (Date.now() - state.lastFrame > 2.5 * every) { ws.onclose(); ws.onclose = null; ws.close(); return; }
      send({ type: "heartbeat" });
    }, every);
    // No cursor yet: the server sends whatever was never acked.
    send(state.cursor ? { type: "hello", since: state.cursor } : { type: "hello" });
    // Resend what never got its `sent`: same client ids, so no duplicates.
    for (const frame of state.pending.values()) send(frame);
  },
  synced() { $("chat-status").textContent = "Connected"; state.backoff = 500; },
  message(f) {
    onMessage(f);
    state.cursor = f.inbox_seq;
    localStorage.setItem(cursorKey, String(state.cursor));
    send({ type: "ack", upto: state.cursor });
  },
  echo: onMessage,
  async sent(f) {
    const frame = state.pending.get(f.client_msg_id);
    state.pending.delete(f.client_msg_id);
    if (frame) await adoptFresh(`new:${frame.to}`, f.conversation);
    const li = document.querySelector(`li[data-client="${CSS.escape(f.client_msg_id)}"]`);
    if (li) { li.dataset.seq = f.seq; li.classList.remove("pending"); }
    const conv = state.convs.get(f.conversation);
    if (conv) { conv.last_seq = Math.max(conv.last_seq, f.seq); showReceipts(conv); }
    else loadConversations();
  },
  read(f) {
    const conv = state.convs.get(f.conversation);
    if (conv) { conv.peer_read_upto = Math.max(conv.peer_read_upto || 0, f.upto); if (state.current === conv.id) showReceipts(conv); }
  },
  typing(f) {
    const conv = state.convs.get(state.current);
    if (!conv || conv.peer.id !== f.user) return;
    $("chat-typing").textContent = `${conv.peer.username} is typing…`;
    clearTimeout(state.typingTimer);
    state.typingTimer = setTimeout(() => { $("chat-typing").textContent = ""; }, 4000);
  },
  presence(f) {
    state.online.set(f.user, f.online);
    for (const conv of state.convs.values()) if (conv.peer.id === f.user) convRow(conv);
  },
  error(f) {
    if (f.code === "cursor_from_future" && f.field === "since") {  // stale cursor (e.g. another server)
      state.cursor = 0; localStorage.removeItem(cursorKey); send({ type: "hello" }); return;
    }
    if (f.ref) {
      state.pending.delete(f.ref);
      const li = document.querySelector(`li[data-client="${CSS.escape(f.ref)}"]`);
      if (li) { li.classList.replace("pending", "failed"); li.querySelector(".chat-receipt").textContent = "Not sent"; }
    }
    $("chat-error").textContent = f.message;
  },
  heartbeat_ok() {},
};

function connect() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/ws/chat/`);
  state.ws = ws;
  state.lastFrame = Date.now();
  ws.onmessage = (e) => { state.lastFrame = Date.now(); const f = JSON.parse(e.data); handlers[f.type]?.(f); };
  ws.onclose = () => {
    clearInterval(state.heartbeat);
    $("chat-status").textContent = "Offline: reconnecting…";
    state.online.clear();
    for (const c of state.convs.values()) convRow(c);
    setTimeout(connect, state.backoff);
    state.backoff = Math.min(state.backoff * 2, 15000);
  };
}

$("chat-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const conv = state.convs.get(state.current);
  const body = $("chat-body").value;
  if (!conv || !body.trim()) return;
  const frame = { type: "send", to: conv.peer.id, client_msg_id: crypto.randomUUID(), body };
  state.pending.set(frame.client_msg_id, frame);
  const li = messageItem({ body, sender: me });
  li.dataset.client = frame.client_msg_id;
  li.classList.add("pending");
  $("chat-messages").append(li);
  $("chat-messages").scrollTop = $("chat-messages").scrollHeight;
  $("chat-body").value = "";
  $("chat-error").textContent = "";
  send(frame);  // if offline, it goes out on reconnect
});
// Enter sends, Shift+Enter makes a new line (as in every chat app).
$("chat-body").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("chat-form").requestSubmit(); }
});
$("chat-body").addEventListener("input", () => {
  const conv = state.convs.get(state.current);
  // A fresh conversation has no contact yet on the server, which refuses typing to strangers.
  if (conv && !conv.fresh && Date.now() - state.lastTyping > 3000) { state.lastTyping = Date.now(); send({ type: "typing", to: conv.peer.id }); }
});
$("chat-messages").addEventListener("scroll", () => { if ($("chat-messages").scrollTop < 40) loadOlder(); });
$("chat-new").addEventListener("submit", async (e) => {
  e.preventDefault();
  await startChatWith($("chat-new-to").value.trim());
});

// Start (or open) a conversation with a username: an exact match from the people
// search (which never lists everyone, and hides blocks exactly like a missing name).
async function startChatWith(name) {
  $("chat-error").textContent = "";
  if (!name) return;
  if (name.toLowerCase() === $("chat").dataset.username.toLowerCase()) {
    $("chat-error").textContent = "That is you: enter the other person's username."; return;
  }
  let person;
  try {
    person = (await api(`people?q=${encodeURIComponent(name)}`)).results.find((p) => p.exact);
  } catch (err) { $("chat-error").textContent = err.message; return; }
  if (!person) { $("chat-error").textContent = `No one you can message is called "${name}".`; return; }
  const found = [...state.convs.values()].find((c) => c.peer.id === person.id);
  $("chat-new-to").value = "";
  if (found) { await openConversation(found.id); $("chat-body").focus(); return; }
  // No conversation yet: open an empty one; the first message creates it on the
  // server instead of a stray greeting.
  const id = `new:${person.id}`;
  state.convs.set(id, { id, fresh: true, peer: { id: person.id, username: person.username }, last_seq: 0,
                        unread: 0, peer_read_upto: 0 });
  await openConversation(id);
  $("chat-body").focus();
}

// The first message of a fresh conversation came back with its real id: swap it in.
async function adoptFresh(freshId, realId) {
  if (!state.convs.has(freshId)) return;
  state.convs.delete(freshId);
  document.querySelector(`li[data-conv="${CSS.escape(freshId)}"]`)?.remove();
  await loadConversations();
  if (state.current !== freshId) return;
  state.current = realId;
  const conv = state.convs.get(realId);
  if (conv) { $("chat-peer").textContent = conv.peer.username; convRow(conv); }
}
document.addEventListener("visibilitychange", () => { const c = state.convs.get(state.current); if (c) markRead(c); });

loadConversations().then(() => {
  connect();
  // /chat/?with=<username>: a link that starts a chat from a name.
  const withName = new URLSearchParams(location.search).get("with");
  if (withName) startChatWith(withName);
});
