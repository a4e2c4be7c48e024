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

// static/js/chat.js
var root = document.getElementById("chat");
var me = Number(root.dataset.userId);
var $ = (id) => document.getElementById(id);
var cursorKey = `chat.cursor.${me}`;
var state = {
  ws: null,
  backoff: 500,
  heartbeat: null,
  convs: /* @__PURE__ */ new Map(),
  current: null,
  cursor: Number(localStorage.getItem(cursorKey) || 0),
  pending: /* @__PURE__ */ new Map(),
  lastTyping: 0,
  typingTimer: null,
  oldest: null,
  loadingOlder: false,
  editing: null,
  // the id of the own message the composer is editing, or null
  // Presence by user id: a presence frame may arrive before its conversation is listed.
  online: /* @__PURE__ */ new Map()
};
function csrf() {
  const m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}
async function api(path, options = {}) {
  const res = await fetch(`/api/chat/${path}`, {
    credentials: "same-origin",
    ...options,
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrf(), ...options.headers || {} }
  });
  const data = res.status === 204 ? null : await res.json();
  if (!res.ok) throw new Error(data?.error?.message || res.statusText);
  return data;
}
var URL_RE = /\bhttps?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;
function renderBody(el, text) {
  let last = 0;
  for (const match of text.matchAll(URL_RE)) {
    el.append(document.createTextNode(text.slice(last, match.index)));
    const a = document.createElement("a");
    a.href = match[0];
    a.textContent = match[0];
    a.rel = "noopener noreferrer nofollow";
    a.target = "_blank";
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
  showUnreadTotal();
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
  const text = document.createElement("span");
  text.className = "chat-text";
  li.append(text);
  const edited = document.createElement("span");
  edited.className = "chat-edited";
  li.append(edited);
  if (m.sender === me) {
    const actions = document.createElement("span");
    actions.className = "chat-actions";
    const edit = document.createElement("button");
    edit.type = "button";
    edit.className = "link";
    edit.textContent = "Edit";
    edit.addEventListener("click", () => startEdit(li));
    const del = document.createElement("button");
    del.type = "button";
    del.className = "link";
    del.textContent = "Delete";
    del.addEventListener("click", () => {
      if (!del.dataset.armed) {
        del.dataset.armed = "1";
        del.textContent = "Confirm delete";
        return;
      }
      send({ type: "delete", id: Number(li.dataset.id), ref: `del-${li.dataset.id}` });
    });
    actions.append(edit, del);
    const r = document.createElement("span");
    r.className = "chat-receipt";
    li.append(actions, r);
  }
  applyMessage(li, m);
  return li;
}
function applyMessage(li, m) {
  if (m.id == null) {
    renderBody(li.querySelector(".chat-text"), m.body);
    li.dataset.body = m.body;
    return;
  }
  if (li.dataset.id && Number(li.dataset.version) > (m.version ?? 0)) return;
  li.dataset.id = m.id;
  li.dataset.version = m.version ?? 0;
  const text = li.querySelector(".chat-text");
  text.replaceChildren();
  li.classList.toggle("deleted", !!m.deleted);
  if (m.deleted) text.textContent = "Message deleted";
  else renderBody(text, m.body);
  li.dataset.body = m.deleted ? "" : m.body;
  li.querySelector(".chat-edited").textContent = m.edited_at && !m.deleted ? " (edited)" : "";
  li.querySelector(".chat-edited").title = m.edited_at ? `edited ${new Date(m.edited_at).toLocaleString()}` : "";
  li.querySelector(".chat-actions")?.toggleAttribute("hidden", !!m.deleted);
}
function onUpdate(m) {
  if (state.current === m.conversation) {
    const li = $("chat-messages").querySelector(`li[data-id="${m.id}"]`);
    if (li) applyMessage(li, m);
    if (state.editing === m.id && m.deleted) cancelEdit();
  }
  const conv = state.convs.get(m.conversation);
  if (conv && conv.last_message?.id === m.id) conv.last_message = m;
  if (m.deleted && m.sender !== me) refreshUnread();
}
function startEdit(li) {
  state.editing = Number(li.dataset.id);
  $("chat-body").value = li.dataset.body;
  $("chat-editing").hidden = false;
  $("chat-body").focus();
}
function cancelEdit() {
  state.editing = null;
  $("chat-editing").hidden = true;
  $("chat-body").value = "";
}
function showReceipts(conv) {
  for (const li of $("chat-messages").querySelectorAll("li.mine")) {
    const seq = Number(li.dataset.seq);
    li.querySelector(".chat-receipt").textContent = seq && seq <= conv.peer_read_upto ? "Read" : seq ? "Sent" : "Sending\u2026";
  }
}
async function openConversation(id) {
  if (state.editing != null) cancelEdit();
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
  if (conv.fresh) {
    state.oldest = 0;
    state.loadingOlder = false;
    return;
  }
  const q = state.oldest ? `?before=${state.oldest}` : "";
  try {
    const data = await api(`conversations/${conv.id}/messages${q}`);
    const box = $("chat-messages");
    const height = box.scrollHeight;
    const missing = data.results.filter((m) => !box.querySelector(`li[data-seq="${m.seq}"]`));
    box.prepend(...missing.reverse().map(messageItem));
    box.scrollTop += box.scrollHeight - height;
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
  if (state.ws?.readyState === WebSocket.OPEN) {
    state.ws.send(JSON.stringify(frame));
    return true;
  }
  return false;
}
function onMessage(m) {
  let conv = state.convs.get(m.conversation);
  if (!conv) {
    loadConversations();
    return;
  }
  conv.last_seq = Math.max(conv.last_seq, m.seq);
  if (m.sender !== me) {
    conv.unread = (conv.unread || 0) + 1;
    notify(conv, m);
  }
  conv.last_message = m;
  if (state.current === m.conversation) {
    if (m.sender !== me) {
      clearTimeout(state.typingTimer);
      $("chat-typing").textContent = "";
    }
    const box = $("chat-messages");
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    const mine = m.sender === me && box.querySelector(`li[data-client="${CSS.escape(m.client_msg_id)}"]`);
    if (mine) {
      mine.dataset.seq = m.seq;
      mine.classList.remove("pending");
      applyMessage(mine, m);
    } else if (!box.querySelector(`li[data-seq="${m.seq}"]`)) box.append(messageItem(m));
    if (atBottom) box.scrollTop = box.scrollHeight;
    showReceipts(conv);
    markRead(conv);
  }
  convRow(conv);
}
var handlers = {
  welcome(f) {
    clearInterval(state.heartbeat);
    const ws2 = state.ws, every = f.heartbeat_seconds * 1e3;
    state.heartbeat = setInterval(() => {
      if (Date.now() - state.lastFrame > 2.5 * every) {
        ws2.onclose();
        ws2.onclose = null;
        ws2.close();
        return;
      }
      send({ type: "heartbeat" });
    }, every);
    send(state.cursor ? { type: "hello", since: state.cursor } : { type: "hello" });
    for (const frame of state.pending.values()) send(frame);
  },
  synced(f) {
    $("chat-status").textContent = "Connected";
    state.backoff = 500;
    for (const conv of state.convs.values()) {
      if (conv.fresh) continue;
      conv.unread = f.unread[conv.id] || 0;
      if (state.current === conv.id) markRead(conv);
      convRow(conv);
    }
    if (Object.keys(f.unread).some((id) => !state.convs.has(Number(id)))) loadConversations();
    showUnreadTotal();
  },
  message(f) {
    onMessage(f);
    advance(f);
  },
  update(f) {
    onUpdate(f);
    advance(f);
  },
  echo(f) {
    if (f.kind === "message") onMessage(f);
    else onUpdate(f);
  },
  changed(f) {
    if (state.editing === f.id) cancelEdit();
    onUpdate(f);
  },
  async sent(f) {
    const frame = state.pending.get(f.client_msg_id);
    state.pending.delete(f.client_msg_id);
    if (frame) await adoptFresh(`new:${frame.to}`, f.conversation);
    const li = document.querySelector(`li[data-client="${CSS.escape(f.client_msg_id)}"]`);
    if (li) {
      li.dataset.seq = f.seq;
      li.dataset.id = f.id;
      li.dataset.version ??= 0;
      li.classList.remove("pending");
    }
    const conv = state.convs.get(f.conversation);
    if (conv) {
      conv.last_seq = Math.max(conv.last_seq, f.seq);
      showReceipts(conv);
    } else loadConversations();
  },
  read(f) {
    const conv = state.convs.get(f.conversation);
    if (conv && f.reader === me) {
      conv.unread = f.unread;
      convRow(conv);
      return;
    }
    if (conv) {
      conv.peer_read_upto = Math.max(conv.peer_read_upto || 0, f.upto);
      if (state.current === conv.id) showReceipts(conv);
    }
  },
  typing(f) {
    const conv = state.convs.get(state.current);
    if (!conv || conv.peer.id !== f.user) return;
    $("chat-typing").textContent = `${conv.peer.username} is typing\u2026`;
    clearTimeout(state.typingTimer);
    state.typingTimer = setTimeout(() => {
      $("chat-typing").textContent = "";
    }, 4e3);
  },
  presence(f) {
    state.online.set(f.user, f.online);
    for (const conv of state.convs.values()) if (conv.peer.id === f.user) convRow(conv);
  },
  error(f) {
    if (f.code === "cursor_from_future" && f.field === "since") {
      state.cursor = 0;
      localStorage.removeItem(cursorKey);
      send({ type: "hello" });
      return;
    }
    if (f.ref && !state.pending.has(f.ref)) {
      $("chat-error").textContent = f.message;
      return;
    }
    if (f.ref) {
      state.pending.delete(f.ref);
      const li = document.querySelector(`li[data-client="${CSS.escape(f.ref)}"]`);
      if (li) {
        li.classList.replace("pending", "failed");
        li.querySelector(".chat-receipt").textContent = "Not sent";
      }
    }
    $("chat-error").textContent = f.message;
  },
  heartbeat_ok() {
  }
};
function advance(f) {
  state.cursor = f.inbox_seq;
  localStorage.setItem(cursorKey, String(state.cursor));
  send({ type: "ack", upto: state.cursor });
}
function showUnreadTotal() {
  let total = 0;
  for (const conv of state.convs.values()) total += conv.unread || 0;
  setUnread(total);
}
var unreadTimer = null;
function refreshUnread() {
  clearTimeout(unreadTimer);
  unreadTimer = setTimeout(async () => {
    let data;
    try {
      data = await api("unread");
    } catch {
      return;
    }
    for (const conv of state.convs.values()) {
      if (!conv.fresh) {
        conv.unread = data.conversations[conv.id] || 0;
        convRow(conv);
      }
    }
  }, 300);
}
function notify(conv, m) {
  if (!document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
  const n = new Notification(conv.peer.username, { body: m.body.slice(0, 140), tag: `chat-${conv.id}` });
  n.onclick = () => {
    window.focus();
    openConversation(conv.id);
    n.close();
  };
}
function showNotifyState() {
  const button = $("chat-notify");
  if (!("Notification" in window)) {
    button.hidden = true;
    return;
  }
  const permission = Notification.permission;
  button.hidden = permission !== "default";
  $("chat-notify-state").textContent = permission === "granted" ? "Notifications are on while this tab is hidden." : permission === "denied" ? "Notifications are blocked in this browser; unread counts still show here." : "";
}
$("chat-notify").addEventListener("click", async () => {
  try {
    await Notification.requestPermission();
  } catch {
  }
  showNotifyState();
});
showNotifyState();
function connect2() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws2 = new WebSocket(`${proto}://${location.host}/ws/chat/`);
  state.ws = ws2;
  state.lastFrame = Date.now();
  ws2.onmessage = (e) => {
    state.lastFrame = Date.now();
    const f = JSON.parse(e.data);
    handlers[f.type]?.(f);
  };
  ws2.onclose = (e) => {
    clearInterval(state.heartbeat);
    const signedOut2 = e?.code === 4401;
    $("chat-status").textContent = signedOut2 ? "Signed out: sign in again." : "Offline: reconnecting\u2026";
    state.online.clear();
    for (const c of state.convs.values()) convRow(c);
    if (signedOut2) return;
    setTimeout(connect2, state.backoff);
    state.backoff = Math.min(state.backoff * 2, 15e3);
  };
}
$("chat-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const conv = state.convs.get(state.current);
  const body = $("chat-body").value;
  if (!conv || !body.trim()) return;
  if (state.editing != null) {
    send({ type: "edit", id: state.editing, body, ref: `edit-${state.editing}` });
    $("chat-error").textContent = "";
    return;
  }
  const frame = { type: "send", to: conv.peer.id, client_msg_id: crypto.randomUUID(), body };
  state.pending.set(frame.client_msg_id, frame);
  const li = messageItem({ body, sender: me });
  li.dataset.client = frame.client_msg_id;
  li.classList.add("pending");
  $("chat-messages").append(li);
  $("chat-messages").scrollTop = $("chat-messages").scrollHeight;
  $("chat-body").value = "";
  $("chat-error").textContent = "";
  send(frame);
});
$("chat-body").addEventListener("keydown", (e) => {
  if (e.key === "Escape" && state.editing != null) {
    e.preventDefault();
    cancelEdit();
    return;
  }
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("chat-form").requestSubmit();
  }
});
$("chat-body").addEventListener("input", () => {
  const conv = state.convs.get(state.current);
  if (conv && !conv.fresh && Date.now() - state.lastTyping > 3e3) {
    state.lastTyping = Date.now();
    send({ type: "typing", to: conv.peer.id });
  }
});
$("chat-edit-cancel").addEventListener("click", cancelEdit);
$("chat-search").addEventListener("submit", async (e) => {
  e.preventDefault();
  const q = $("chat-search-q").value.trim();
  const list = $("chat-search-results");
  list.hidden = !q;
  if (!q) return;
  const note = (text) => {
    const li = document.createElement("li");
    li.className = "chat-status";
    li.textContent = text;
    return li;
  };
  let data;
  try {
    data = await api(`search?q=${encodeURIComponent(q)}`);
  } catch (err) {
    list.replaceChildren(note(err.message));
    return;
  }
  list.replaceChildren(...data.results.length ? data.results.map(searchHit) : [note("No messages match.")]);
});
function searchHit(m) {
  const li = document.createElement("li");
  const b = document.createElement("button");
  b.type = "button";
  const who = document.createElement("strong");
  who.textContent = m.sender === me ? "You" : m.peer.username;
  const text = document.createElement("span");
  text.textContent = m.body.length > 120 ? `${m.body.slice(0, 120)}\u2026` : m.body;
  b.append(who, document.createTextNode(" "), text);
  b.addEventListener("click", async () => {
    if (!state.convs.has(m.conversation)) await loadConversations();
    await openConversation(m.conversation);
    $("chat-messages").querySelector(`li[data-id="${m.id}"]`)?.scrollIntoView({ block: "center" });
  });
  li.append(b);
  return li;
}
$("chat-messages").addEventListener("scroll", () => {
  if ($("chat-messages").scrollTop < 40) loadOlder();
});
$("chat-new").addEventListener("submit", async (e) => {
  e.preventDefault();
  await startChatWith($("chat-new-to").value.trim());
});
async function startChatWith(name) {
  $("chat-error").textContent = "";
  if (!name) return;
  if (name.toLowerCase() === $("chat").dataset.username.toLowerCase()) {
    $("chat-error").textContent = "That is you: enter the other person's username.";
    return;
  }
  let person;
  try {
    person = (await api(`people?q=${encodeURIComponent(name)}`)).results.find((p) => p.exact);
  } catch (err) {
    $("chat-error").textContent = err.message;
    return;
  }
  if (!person) {
    $("chat-error").textContent = `No one you can message is called "${name}".`;
    return;
  }
  const found = [...state.convs.values()].find((c) => c.peer.id === person.id);
  $("chat-new-to").value = "";
  if (found) {
    await openConversation(found.id);
    $("chat-body").focus();
    return;
  }
  const id = `new:${person.id}`;
  state.convs.set(id, {
    id,
    fresh: true,
    peer: { id: person.id, username: person.username },
    last_seq: 0,
    unread: 0,
    peer_read_upto: 0
  });
  await openConversation(id);
  $("chat-body").focus();
}
async function adoptFresh(freshId, realId) {
  if (!state.convs.has(freshId)) return;
  state.convs.delete(freshId);
  document.querySelector(`li[data-conv="${CSS.escape(freshId)}"]`)?.remove();
  await loadConversations();
  if (state.current !== freshId) return;
  state.current = realId;
  const conv = state.convs.get(realId);
  if (conv) {
    $("chat-peer").textContent = conv.peer.username;
    convRow(conv);
  }
}
document.addEventListener("visibilitychange", () => {
  const c = state.convs.get(state.current);
  if (c) markRead(c);
});
loadConversations().then(() => {
  connect2();
  const params = new URLSearchParams(location.search);
  const withName = params.get("with");
  if (withName) startChatWith(withName).then(() => {
    if (params.get("about")) $("chat-body").value = params.get("about");
  });
});
